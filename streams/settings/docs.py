"""docs/configuration.md, made from the settings models (`streams.settings`):

    python -m streams.settings.docs > docs/configuration.md

Each section of `Settings` is a part of the page (its `title` and `about`), each field a row: its
environment variable, type, default and description. tests/unit/docs/test_configuration_docs.py
fails when the checked-in page is not what this makes now. `memstream settings --markdown` prints
the same page.
"""
from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import SecretStr
from pydantic.fields import FieldInfo

from streams.settings import Section
from streams.settings import sections as settings_sections

HEADER = ("<!-- Made by `python -m streams.settings.docs > docs/configuration.md` from "
          "streams/settings/: do not edit by hand. -->")


def _text(text: str) -> str:
    """Text as Markdown: a `<` outside code is no HTML tag."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


def _cell(text: str) -> str:
    """Text fit for one table cell: one line, no column breaks."""
    return _text(re.sub(r"\s+", " ", text).strip().replace("|", "\\|"))


def _number(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def type_of(field: FieldInfo) -> str:
    """A short reading of a field's type and bounds: `integer ≥ 1`, `one of dense, hybrid`, …"""
    annotation = field.annotation
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in get_args(annotation))
    kind = {bool: "true or false", int: "integer", float: "number", str: "text", Path: "path",
            SecretStr: "secret"}.get(annotation, getattr(annotation, "__name__", str(annotation)))
    bounds = {type(item).__name__.lower(): getattr(item, type(item).__name__.lower())
              for item in field.metadata if type(item).__name__ in ("Ge", "Gt", "Le", "Lt")}
    low = (f"≥ {_number(bounds['ge'])}" if "ge" in bounds
           else f"> {_number(bounds['gt'])}" if "gt" in bounds else "")
    high = (f"≤ {_number(bounds['le'])}" if "le" in bounds
            else f"< {_number(bounds['lt'])}" if "lt" in bounds else "")
    return " ".join(part for part in (kind, ", ".join(p for p in (low, high) if p)) if part)


def default_of(field: FieldInfo) -> str:
    """The default as one would write it in the environment; `unset` for none."""
    default = field.default
    if default is None:
        return "unset"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    return f"`{_number(default)}`"


def sections() -> list[tuple[str, type[Section], list[tuple[str, FieldInfo]]]]:
    """Every section (its anchor, model and fields), in the order of `Settings`."""
    return [(anchor, model, list(model.model_fields.items()))
            for anchor, model in settings_sections().items()]


def markdown() -> str:
    """docs/configuration.md: every setting, by section."""
    grouped = sections()
    lines = [HEADER, "", "# Configuration", "",
             "Every setting is read from the environment variable of the same name (any case) "
             "when a worker, the CLI or a tool starts. `memstream settings` prints the effective "
             "values (secrets as `****`). "
             "The compose stack's own variables are in "
             "[operations.md](operations.md#compose-variables).", "",
             "Sections:", ""]
    lines += [f"- [{model.title}](#{anchor}) ({len(fields)})" for anchor, model, fields in grouped]
    lines.append("")
    for anchor, model, fields in grouped:
        lines += [f'<a id="{anchor}"></a>', "", f"## {model.title}", "",
                  model.about, "", "| variable | type | default | meaning |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| `{name.upper()}` | {_cell(type_of(field))} | {default_of(field)} | "
                  f"{_cell(field.description or '')} |" for name, field in fields]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
