"""Turning raw input bytes into a `Turn`, or a named reason why not (SPEC §7)."""
from __future__ import annotations

import json

from pydantic import ValidationError

from streams.errors import InvalidRecord
from topics.turns import Turn


def _describe(exc: ValidationError) -> str:
    """Short, content-free description of what failed (field names and error types only)."""
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{loc}: {err['type']}")
    return "; ".join(parts)


def parse_turn(raw: bytes | None, key: bytes | None, *, max_bytes: int, max_chars: int) -> Turn:
    """Decode, parse and validate one `chat.turns` record.

    Raises `InvalidRecord` with reason one of: empty, oversized, not_utf8, malformed_json,
    invalid_schema, oversized_text, missing_key, key_mismatch.
    """
    if not raw:
        raise InvalidRecord("empty", "record has no value")
    if len(raw) > max_bytes:
        raise InvalidRecord("oversized", f"{len(raw)} bytes > limit {max_bytes}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRecord("not_utf8", f"invalid UTF-8 at byte {exc.start}") from None
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRecord("malformed_json", f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit number, nesting deeper than Python's stack
        raise InvalidRecord("malformed_json", type(exc).__name__) from None
    if not isinstance(payload, dict):
        raise InvalidRecord("invalid_schema", f"expected a JSON object, got {type(payload).__name__}")
    try:
        turn = Turn.model_validate(payload)
    except ValidationError as exc:
        raise InvalidRecord("invalid_schema", _describe(exc)) from None
    if len(turn.text) > max_chars:
        raise InvalidRecord("oversized_text", f"text has {len(turn.text)} chars > limit {max_chars}")
    if key is None:
        raise InvalidRecord("missing_key", "record has no key; every topic is keyed by user_id")
    if key != turn.user_id.encode("utf-8"):
        # Every topic is keyed by user_id; a wrong key would put the user's state on the wrong
        # partition and split it across workers.
        raise InvalidRecord("key_mismatch", "record key is not the turn's user_id")
    return turn
