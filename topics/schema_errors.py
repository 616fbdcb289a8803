"""Content-free descriptions of a wire schema's validation errors.

A description names where a record is wrong (the field path) and how (pydantic's error type or
its fixed message), never a value: these texts end up in dead letters, logs and HTTP answers,
and a record's values are user content. The name of an unknown field is content too (a key can
be any text), so an unknown field is reported at its parent's path.
"""
from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError
from pydantic_core import ErrorDetails

Path = tuple[int | str, ...]


def location(error: ErrorDetails, root: str = "<root>") -> str:
    """The dotted path of one error (`root` for the record itself)."""
    loc = error["loc"]
    if error["type"] == "extra_forbidden":
        loc = loc[:-1]
    return ".".join(str(part) for part in loc) or root


def describe(exc: ValidationError, limit: int = 5) -> str:
    """`path: error_type` per problem (the first `limit`), `; `-joined: for machines and DLQs."""
    return "; ".join(f"{location(e)}: {e['type']}" for e in exc.errors()[:limit])


def _unknown(parent: Path) -> str:
    return "unknown field"


def explain(exc: ValidationError, root: str = "body", limit: int = 10,
            unknown: Callable[[Path], str] = _unknown) -> str:
    """`path: message` per problem (the first `limit`, each once), `; `-joined: for people.

    pydantic's messages are fixed texts; an unknown field under `parent` says `unknown(parent)`.
    """
    parts = [f"{location(e, root)}: "
             + (unknown(tuple(e["loc"][:-1])) if e["type"] == "extra_forbidden" else e["msg"])
             for e in exc.errors()[:limit]]
    return "; ".join(dict.fromkeys(parts))
