"""`memory.commands` (`streams.pipeline.commands.parse_command_record`) under hostile input: a
usable `Command` or `InvalidCommand`, and no error carries the input's content."""
from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from streams.pipeline.commands import InvalidCommand, parse_command_record
from tests.fuzzing import MARKER, assert_content_free, assert_usable, dumps, fuzz_settings, hostile_bytes, own_key
from tests.unit.fuzz.records import commands

MAX_BYTES = 1_000_000
VALID = {"command_id": "c1", "kind": "forget", "user_id": "u1", "ts": "2024-05-01T10:00:00+00:00",
         "query": f"my {MARKER}"}


def _with(**fields: object) -> bytes:
    return dumps({**VALID, **fields}).encode()


@fuzz_settings(300)
@given(raw=hostile_bytes(commands), key_kind=st.sampled_from(["own", "own", "none", "other"]))
@example(raw=_with(**{MARKER: 1}), key_kind="own")  # named the unknown field
@example(raw=_with(ts="0001-01-01T00:00:00+05:00"), key_kind="own")  # no UTC instant
def test_any_record_gives_a_usable_command_or_a_content_free_invalid_command(raw, key_kind):
    key = {"own": own_key(raw), "none": None, "other": MARKER.encode()}[key_kind]
    try:
        command = parse_command_record(raw, key, MAX_BYTES)
    except InvalidCommand as exc:
        assert_content_free(exc)
    else:
        assert_usable(command)
        assert key == command.user_id.encode("utf-8")


@fuzz_settings(150)
@given(record=commands)
def test_valid_commands_parse(record):
    command = parse_command_record(json.dumps(record).encode(), record["user_id"].encode(), MAX_BYTES)
    assert (command.kind, command.command_id) == (record["kind"], record["command_id"])
