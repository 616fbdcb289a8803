"""Ids are UUID 5 of their parts (streams/memory/ids.py), made without `uuid`'s objects."""
from __future__ import annotations

import random
import uuid

from streams.memory import ids


def test_uuid5_text_is_uuid5_of_the_namespace():
    rng = random.Random(7)
    alphabet = "ab|\\\"[],é😀 \n"
    for _ in range(3000):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert ids.uuid5_text(name) == str(uuid.uuid5(ids._NS, name))


def test_memory_and_event_ids_are_those_of_before():
    # ids written before the change must be the ids made now (a replay finds its memory)
    assert ids.memory_id("u1", "t1", "turn-1", 0) == str(
        uuid.uuid5(ids._NS, '["memory","u1","t1","turn-1","0"]'))
    assert ids.event_id("m1", "created", 1) == str(uuid.uuid5(ids._NS, '["event","m1","created","1"]'))
