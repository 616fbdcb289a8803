"""`memory.events` as the sink stage reads them (`sinks.routing.parse_events`) under hostile
input: usable `MemoryEvent`s or a content-free ValueError."""
from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from sinks.routing import parse_events
from tests.fuzzing import (MARKER, assert_content_free, assert_usable, dumps, fuzz_settings, hostile_bytes,
                           near_valid)
from tests.unit.fuzz.records import events

VALID = {"event_id": "e1", "kind": "created", "user_id": "u1", "thread_id": "t1", "memory_id": "m1",
         "rev": 1, "ts": "2024-05-01T10:00:00+00:00", "summary": f"Ana {MARKER}.", "category": "Personal"}


EVENT_ARRAYS = st.lists(st.one_of(events, near_valid(events)), max_size=3).map(
    lambda items: dumps(items).encode())
"""Records of the array form, their events valid or near-valid."""


@fuzz_settings(300)
@given(raw=st.one_of(hostile_bytes(events), EVENT_ARRAYS))
@example(raw=None)
@example(raw=b'{"' + MARKER.encode() + b'": 1}')
@example(raw=dumps({**VALID, "ts": "0001-01-01T00:00:00+05:00"}).encode())  # no UTC instant
@example(raw=dumps([VALID, {**VALID, "rev": -1}]).encode())  # one bad event spoils its record
@example(raw=b"[" * 100_000)
def test_any_record_gives_usable_events_or_a_content_free_value_error(raw):
    try:
        parsed = parse_events(raw)
    except ValueError as exc:
        assert type(exc) is ValueError and str(exc).startswith("invalid_event")
        assert_content_free(exc)
    else:
        for event in parsed:
            assert_usable(event)


@fuzz_settings(100)
@given(data=st.lists(events, min_size=1, max_size=4))
def test_valid_events_parse_in_both_forms(data):
    """A record of the array form; one written before, a single `MemoryEvent` object."""
    assert [e.event_id for e in parse_events(json.dumps(data).encode())] == [d["event_id"] for d in data]
    assert [e.event_id for e in parse_events(json.dumps(data[0]).encode())] == [data[0]["event_id"]]
