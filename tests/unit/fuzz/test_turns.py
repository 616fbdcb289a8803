"""`chat.turns` (`streams.write.validation.parse_turn`) under hostile input: a usable `Turn` or
`InvalidRecord` with one of its named reasons, and no error carries the input's content."""
from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from streams.errors import InvalidRecord
from streams.write.validation import parse_turn
from tests.fuzzing import MARKER, assert_content_free, assert_usable, dumps, fuzz_settings, hostile_bytes, own_key
from tests.unit.fuzz.records import turns

REASONS = {"empty", "oversized", "not_utf8", "malformed_json", "invalid_schema", "oversized_text",
           "missing_key", "key_mismatch"}
MAX_BYTES = 1_000_000  # above every generated record: the parser, not the size check, decides
VALID = {"user_id": "u1", "thread_id": "t1", "turn_id": "1", "role": "user",
         "text": f"I told nobody {MARKER}.", "ts": "2024-05-01T10:00:00+00:00"}


def _with(**fields: object) -> bytes:
    return dumps({**VALID, **fields}).encode()


def check(raw: bytes, key: bytes | None, max_chars: int) -> None:
    try:
        turn = parse_turn(raw, key, max_bytes=MAX_BYTES, max_chars=max_chars)
    except InvalidRecord as exc:
        assert exc.reason in REASONS, exc.reason
        assert_content_free(exc, exc.detail)
    else:
        assert_usable(turn)
        assert key == turn.user_id.encode("utf-8") and len(turn.text) <= max_chars


@fuzz_settings(400)
@given(raw=hostile_bytes(turns), key_kind=st.sampled_from(["own", "own", "none", "other"]),
       max_chars=st.sampled_from([8000, 8000, 5]))
# Regressions: each raised something other than InvalidRecord (a number past Python's
# int-from-text limit, nesting past the recursion limit), named the input (an unknown field),
# or gave a turn that cannot be written back (a lone surrogate) or converted to UTC (year 1).
@example(raw=_with(metadata="\x00splice:bigint"), key_kind="own", max_chars=8000)
@example(raw=_with(metadata="\x00splice:deep_array"), key_kind="own", max_chars=8000)
@example(raw=_with(text="\ud800" + MARKER), key_kind="own", max_chars=8000)
@example(raw=_with(**{MARKER: 1}), key_kind="own", max_chars=8000)
@example(raw=_with(ts="0001-01-01T00:00:00+05:00"), key_kind="own", max_chars=8000)
@example(raw=_with(ts="9999-12-31T23:59:59-23:59"), key_kind="own", max_chars=8000)
def test_any_record_gives_a_usable_turn_or_a_named_content_free_reason(raw, key_kind, max_chars):
    key = {"own": own_key(raw), "none": None, "other": MARKER.encode()}[key_kind]
    check(raw, key, max_chars)


@fuzz_settings(150)
@given(record=turns)
def test_valid_turns_parse(record):
    raw = json.dumps(record).encode()
    turn = parse_turn(raw, record["user_id"].encode(), max_bytes=MAX_BYTES, max_chars=8000)
    assert turn.text == record["text"] and turn.user_id == record["user_id"]


@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-23:59",
                                "1899-12-31T23:59:59Z", "2200-01-01T00:00:00Z"])
def test_a_turn_dated_outside_the_supported_range_is_a_schema_error(ts):
    with pytest.raises(InvalidRecord) as info:
        parse_turn(_with(ts=ts), b"u1", max_bytes=MAX_BYTES, max_chars=8000)
    assert (info.value.reason, info.value.detail) == ("invalid_schema", "ts: out_of_range")
