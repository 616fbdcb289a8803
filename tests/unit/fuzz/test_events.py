"""`memory.events` as the sink stage reads them (`sinks.routing.parse_event`) under hostile
input: a usable `MemoryEvent` or a content-free ValueError."""
from __future__ import annotations

import json

from hypothesis import example, given

from sinks.routing import parse_event
from tests.fuzzing import MARKER, assert_content_free, assert_usable, dumps, fuzz_settings, hostile_bytes
from tests.unit.fuzz.records import events

VALID = {"event_id": "e1", "kind": "created", "user_id": "u1", "thread_id": "t1", "memory_id": "m1",
         "rev": 1, "ts": "2024-05-01T10:00:00+00:00", "summary": f"Ana {MARKER}.", "category": "Personal"}


@fuzz_settings(300)
@given(raw=hostile_bytes(events))
@example(raw=None)
@example(raw=b'{"' + MARKER.encode() + b'": 1}')
@example(raw=dumps({**VALID, "ts": "0001-01-01T00:00:00+05:00"}).encode())  # no UTC instant
def test_any_record_gives_a_usable_event_or_a_content_free_value_error(raw):
    try:
        event = parse_event(raw)
    except ValueError as exc:
        assert type(exc) is ValueError and str(exc).startswith("invalid_event: ")
        assert_content_free(exc)
    else:
        assert_usable(event)


@fuzz_settings(100)
@given(data=events)
def test_valid_events_parse(data):
    assert parse_event(json.dumps(data).encode()).event_id == data["event_id"]
