"""Turning raw input bytes into a `Turn`, or a named reason why not (docs/architecture.md#bad-input)."""
from __future__ import annotations

import orjson
from pydantic import ValidationError

from streams.errors import InvalidRecord
from topics.schema_errors import describe
from topics.turns import Turn


def _rejection(exc: ValidationError) -> InvalidRecord:
    """The named reason of a record pydantic refused (no input value in the detail)."""
    first = exc.errors()[0]
    if first["type"] == "json_invalid":  # the parser's fixed message, with line and column
        return InvalidRecord("malformed_json", first["msg"].removeprefix("Invalid JSON: "))
    if first["type"] == "model_type" and not first["loc"]:
        return InvalidRecord("invalid_schema", "expected a JSON object")
    return InvalidRecord("invalid_schema", describe(exc))


def parse_turn(raw: bytes | None, key: bytes | None, *, max_bytes: int, max_chars: int) -> Turn:
    """Decode, parse and validate one `chat.turns` record.

    Raises `InvalidRecord` with reason one of: empty, oversized, not_utf8, malformed_json,
    invalid_schema, oversized_text, missing_key, key_mismatch. The JSON parser is pydantic's:
    unlike `json.loads` it bounds nesting depth, takes numbers of any length, and refuses lone
    surrogate escapes (text that could never be written out as UTF-8 again).
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
        turn = Turn.model_validate_json(text)
    except ValidationError as exc:
        raise _rejection(exc) from None
    if len(turn.text) > max_chars:
        raise InvalidRecord("oversized_text", f"text has {len(turn.text)} chars > limit {max_chars}")
    try:  # the stages' JSON (orjson) holds 64-bit integers; pydantic's parser takes any
        orjson.dumps(turn.metadata)
    except TypeError:
        raise InvalidRecord("invalid_schema", "metadata holds an integer beyond 64 bits") from None
    if key is None:
        raise InvalidRecord("missing_key", "record has no key; every topic is keyed by user_id")
    if key != turn.user_id.encode("utf-8"):
        # Every topic is keyed by user_id; a wrong key would put the user's state on the wrong
        # partition and split it across workers.
        raise InvalidRecord("key_mismatch", "record key is not the turn's user_id")
    return turn
