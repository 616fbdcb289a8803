"""Ids are UUID 5 of their parts (streams/memory/ids.py): a replay finds the ids made before."""
from __future__ import annotations

import uuid

from streams.memory import ids


def test_memory_and_event_ids_are_those_of_before():
    assert ids.memory_id("u1", "t1", "turn-1", 0) == str(
        uuid.uuid5(ids._NS, '["memory","u1","t1","turn-1","0"]'))
    assert ids.event_id("m1", "created", 1) == str(uuid.uuid5(ids._NS, '["event","m1","created","1"]'))
