"""docs/api.md, made from the OpenAPI document (`streams.api.openapi.build_spec`):

    python -m streams.api.openapi_docs > docs/api.md

tests/unit/api/test_api_docs.py fails when the checked-in docs/api.md is not what this makes now.
"""
from __future__ import annotations

import re
import sys
from typing import Any

from streams.api.openapi import build_spec

HEADER = ("<!-- Made by `python -m streams.api.openapi_docs > docs/api.md` from "
          "streams/api/openapi.py: do not edit by hand. -->")


def _text(text: Any) -> str:
    """Text of the document as Markdown: a `<` outside code is no HTML tag."""
    parts = re.split(r"(`[^`]*`)", str(text))
    return "".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


def _cell(text: Any) -> str:
    """Text fit for one table cell: one line, no column breaks."""
    return _text(re.sub(r"\s+", " ", str(text)).strip().replace("|", "\\|"))


def type_of(schema: Any) -> str:
    """A short reading of a JSON schema: `string`, `array of [Model](#model)`, ..."""
    if not isinstance(schema, dict) or not schema:
        return "any"
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            return " or ".join(type_of(option) for option in schema[keyword])
    if "const" in schema:
        return f"`{schema['const']}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{value}`" for value in schema["enum"])
    if "contentSchema" in schema:
        return f"{schema['contentMediaType']} of {type_of(schema['contentSchema'])}"
    kind = schema.get("type")
    if kind == "array":
        return f"array of {type_of(schema.get('items'))}"
    if kind == "object" and "properties" in schema:
        required = set(schema.get("required", ()))
        fields = [f"{name}{'' if name in required else '?'}: {type_of(sub)}"
                  for name, sub in schema["properties"].items()]
        return "{" + ", ".join(fields) + "}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_of(schema['additionalProperties'])}"
    limits = [f"{word} {schema[key]}" for key, word in (
        ("minimum", "min"), ("maximum", "max"), ("minLength", "min length"),
        ("maxLength", "max length"), ("format", "format")) if key in schema]
    if "pattern" in schema:
        limits.append(f"matching `{schema['pattern']}`")
    text = kind if isinstance(kind, str) else " or ".join(kind) if kind else "any"
    return f"{text} ({', '.join(limits)})" if limits else text


def _operation(method: str, path: str, op: dict[str, Any]) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", "", _text(op["summary"]), ""]
    if op.get("security") == []:
        lines += ["No key needed.", ""]
    if op["parameters"]:
        lines += ["| parameter | in | type | required | description |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| `{p['name']}` | {p['in']} | {_cell(type_of(p['schema']))} | "
                  f"{'yes' if p['required'] else 'no'} | {_cell(p['description'])} |"
                  for p in op["parameters"]]
        lines.append("")
    if "requestBody" in op:
        for media, content in op["requestBody"]["content"].items():
            lines += [f"Body ({media}): {type_of(content['schema'])}", ""]
    lines += ["| status | content | body | meaning |", "| --- | --- | --- | --- |"]
    for code, response in op["responses"].items():
        for media, content in response["content"].items():
            lines.append(f"| {code} | {media} | {_cell(type_of(content['schema']))} | "
                         f"{_cell(response['description'])} |")
    return lines + [""]


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"### {name}", ""]
    if schema.get("description"):
        lines += [_cell(schema["description"]), ""]
    if "properties" not in schema:
        shape = {key: value for key, value in schema.items() if key != "description"}
        return lines + [f"Type: {type_of(shape)}", ""]
    required = set(schema.get("required", ()))
    lines += ["| field | type | required | description |", "| --- | --- | --- | --- |"]
    lines += [f"| `{name}` | {_cell(type_of(sub))} | {'yes' if name in required else 'no'} | "
              f"{_cell(sub.get('description', ''))} |" for name, sub in schema["properties"].items()]
    if schema.get("additionalProperties") is True:
        lines.append("| (others) | any | no | More fields may come. |")
    return lines + [""]


def markdown(spec: dict[str, Any]) -> str:
    """The API's reference as Markdown: the operations by tag, then the schemas."""
    info = spec["info"]
    lines = [HEADER, "", f"# The {info['title']} HTTP API", "", _text(info["description"]), "",
             f"OpenAPI {spec['openapi']}, served by every worker at `GET /openapi.json`. A "
             "`text/event-stream` body's schema is that of one event; `: ping` comment lines "
             "keep the stream alive.", ""]
    operations = [(method, path, op) for path, ops in spec["paths"].items()
                  for method, op in ops.items()]
    for tag in dict.fromkeys(op["tags"][0] for _, _, op in operations):
        lines += [f"## {tag}", ""]
        for method, path, op in operations:
            if op["tags"][0] == tag:
                lines += _operation(method, path, op)
    lines += ["## Schemas", ""]
    for name, schema in spec["components"]["schemas"].items():
        lines += _schema(name, schema)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown(build_spec()))
