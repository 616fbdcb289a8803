"""The SSE replay buffer as a ring of chunks (streams/pipeline/recent_events.py): the same list as
`remember` keeps, a batch costing its own events in the table, purges leaving no readable copy,
and buffers in the format before the ring read and converted."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from streams.pipeline.recent_events import RecentEvents, head_key, remember, slot_key
from streams.privacy.crypto import new_key
from streams.privacy.table_values import unpack
from streams.privacy.sealed import TABLE_OWNERS, SealedTable, Sealer
from streams.privacy.user_keys import UserKeys
from topics.events import MemoryEvent

USER = "ana"


class Recording(dict):
    """A raw table that counts the bytes written to it (as a changelog would)."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[tuple[Any, int]] = []
        self.deleted: list[Any] = []

    def __setitem__(self, key: Any, value: Any) -> None:
        self.written.append((key, len(value)))  # a sealed table value is bytes
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self.deleted.append(key)
        super().__delitem__(key)


@pytest.fixture
def sealed() -> SealedTable:
    return SealedTable(Recording(), Sealer(UserKeys({}, new_key())), TABLE_OWNERS["recent_events"])


def event(event_id: str, kind: str = "created", memory_id: str = "m", summary: str = "Ana has a dog.",
          **meta: Any) -> MemoryEvent:
    return MemoryEvent(event_id=event_id, kind=kind, user_id=USER, thread_id="t",  # type: ignore[arg-type]
                       memory_id=memory_id, rev=1, ts=datetime(2024, 5, 1, tzinfo=timezone.utc),
                       summary=summary, category="Personal", meta=meta)


def ids(events: list[dict[str, Any]]) -> list[str]:
    return [e["event_id"] for e in events]


def test_the_ring_keeps_the_same_list_as_remember_batch_after_batch(sealed):
    ring, expected = RecentEvents(sealed, 5), []
    batches = [[event(f"e{b}-{i}", memory_id=f"m{i % 3}") for i in range(n)]
               for b, n in enumerate([1, 3, 2, 7, 1, 1, 4])]
    batches[4] = [event("e3-2", memory_id="m2")]  # a replay: nothing new
    for batch in batches:
        added = ring.add(USER, batch)
        new = []
        for e in batch:
            updated = remember(expected, e, 5)
            if updated is not None:
                expected, new = updated, [*new, updated[-1]]
        assert ids(added) == ids(new)
        assert ids(ring.events(USER)) == ids(expected)
    assert len(sealed) <= 5 + 1, "no more slots than the size, and the head"


def test_a_batch_writes_its_own_events_and_a_small_head_not_the_buffer(sealed):
    ring = RecentEvents(sealed, 50)
    for b in range(60):
        ring.add(USER, [event(f"e{b}", summary=f"Ana said thing number {b}. " * 8)])
    raw: Recording = sealed.table
    raw.written.clear()
    ring.add(USER, [event("new", summary="Ana said thing number 61. " * 8)])
    keys = [key for key, _ in raw.written]
    assert keys == [slot_key(USER, 60 % 50), head_key(USER)] and raw.deleted == [], \
        "the new chunk takes the slot of the one it pushes out: no deletion"
    assert sealed[head_key(USER)] == {"next": 61, "size": 50, "slots": [[11, 39], [0, 11]]}
    one_event = raw.written[0][1]
    assert raw.written[1][1] < 200 and one_event < 1000
    assert sum(size for _, size in raw.written) < 2 * one_event, "not the buffer's 50 events"
    assert len(ring.events(USER)) == 50 and ring.events(USER)[-1]["event_id"] == "new"


def test_the_oldest_chunks_go_once_newer_ones_hold_the_buffer(sealed):
    ring = RecentEvents(sealed, 4)
    ring.add(USER, [event("a1"), event("a2"), event("a3")])
    ring.add(USER, [event("b1"), event("b2")])
    assert ids(ring.events(USER)) == ["a2", "a3", "b1", "b2"]
    ring.add(USER, [event("c1"), event("c2")])
    assert ids(ring.events(USER)) == ["b1", "b2", "c1", "c2"]
    placed = [(seq, slot, len(events)) for seq, slot, events in ring.read(USER).chunks]
    assert placed == [(1, 1, 2), (2, 0, 2)], "chunk c took the slot chunk a left"
    assert len(sealed.table) == 3


def test_a_replayed_event_is_not_added_again(sealed):
    ring = RecentEvents(sealed, 10)
    assert ids(ring.add(USER, [event("e1"), event("e2")])) == ["e1", "e2"]
    assert ring.add(USER, [event("e2"), event("e1")]) == []
    assert ids(ring.add(USER, [event("e2"), event("e3"), event("e3")])) == ["e3"]
    assert ids(ring.events(USER)) == ["e1", "e2", "e3"]


def test_a_user_purge_leaves_only_purged_events_and_no_other_slot(sealed):
    ring = RecentEvents(sealed, 3)
    for i in range(4):
        ring.add(USER, [event(f"e{i}")])
    ring.add(USER, [event("p1", "purged", summary="")])
    assert ids(ring.events(USER)) == ["p1"]
    assert sorted(sealed.table) == sorted([head_key(USER), slot_key(USER, 4 % 3)])
    assert "Ana has a dog" not in repr(dict(sealed.items()))


def test_after_a_shred_the_first_write_deletes_every_unreadable_slot(sealed):
    ring = RecentEvents(sealed, 3)
    for i in range(3):
        ring.add(USER, [event(f"e{i}")])
    sealed.sealer.keys.shred(USER, datetime(2024, 5, 2, tzinfo=timezone.utc))
    assert ring.events(USER) == [], "nothing opens"
    ring.add(USER, [event("p1", "purged", summary="")])
    assert ids(ring.events(USER)) == ["p1"]
    assert len(sealed.table) == 2, "the new chunk and head; every old key deleted"


def test_purging_one_memory_removes_its_events_stored_seen_or_not(sealed):
    ring = RecentEvents(sealed, 3)
    ring.add(USER, [event("x1", memory_id="x", summary="Ana's secret."), event("a1", memory_id="a")])
    ring.add(USER, [event("b1", memory_id="b"), event("b2", memory_id="b")])
    assert ids(ring.events(USER)) == ["a1", "b1", "b2"]
    assert "secret" in repr(dict(sealed.items())), "x1 is older than the buffer, still stored"
    ring.add(USER, [event("px", "purged", memory_id="x", summary="", reason="purge_at")])
    assert ids(ring.events(USER)) == ["b1", "b2", "px"]
    assert "secret" not in repr(dict(sealed.items()))
    ring.add(USER, [event("pb", "purged", memory_id="b", summary="", reason="purge_at")])
    assert ids(ring.events(USER)) == ["px", "pb"]


def test_a_purge_rewrites_only_the_chunks_it_reaches(sealed):
    ring = RecentEvents(sealed, 6)
    ring.add(USER, [event("a1", memory_id="a"), event("a2", memory_id="a")])
    ring.add(USER, [event("x1", memory_id="x", summary="Ana's secret."), event("b1", memory_id="b")])
    ring.add(USER, [event("c1", memory_id="c")])
    sealed.table.written.clear()
    ring.add(USER, [event("px", "purged", memory_id="x", summary="", reason="purge_at")])
    assert ids(ring.events(USER)) == ["a1", "a2", "b1", "c1", "px"]
    assert [key for key, _ in sealed.table.written] == [slot_key(USER, 1), slot_key(USER, 3),
                                                        head_key(USER)]
    assert sealed.table.deleted == [] and "secret" not in repr(dict(sealed.items()))
    ring.add(USER, [event("pc", "purged", memory_id="c", summary="", reason="purge_at")])
    assert ids(ring.events(USER)) == ["a1", "a2", "b1", "px", "pc"]
    assert ring.read(USER).sound, "an emptied chunk stays, empty, until it is the oldest"
    for i in range(4):
        ring.add(USER, [event(f"d{i}", memory_id="d")])
    assert ids(ring.events(USER)) == ["b1", "px", "pc", "d0", "d1", "d2", "d3"][-6:]


def test_a_purge_that_would_leave_more_chunks_than_slots_rewrites_the_ring(sealed):
    ring = RecentEvents(sealed, 3)
    ring.add(USER, [event("a1", memory_id="a"), event("a2", memory_id="a")])
    ring.add(USER, [event("x1", memory_id="x")])
    ring.add(USER, [event("y1", memory_id="y")])
    assert ids(ring.events(USER)) == ["a2", "x1", "y1"]
    ring.add(USER, [event("px", "purged", memory_id="x", summary="", reason="purge_at")])
    assert ids(ring.events(USER)) == ["a2", "y1", "px"]
    assert len(sealed.table) == 2, "one chunk and the head"


def test_events_trimmed_within_a_batch_stay_out_after_its_purge(sealed):
    """`remember` trims as it adds: events a batch pushed out do not come back when a purge
    later in the batch makes room."""
    ring, expected = RecentEvents(sealed, 3), []
    batches = [[event("a", memory_id="a"), event("b", memory_id="b"), event("c", memory_id="c")],
               [event("x1", memory_id="x"), event("x2", "updated", memory_id="x"),
                event("px", "purged", memory_id="x", summary="", reason="purge_at")]]
    for batch in batches:
        ring.add(USER, batch)
        for e in batch:
            expected = remember(expected, e, 3) or expected
    assert ids(ring.events(USER)) == ids(expected) == ["c", "px"]


def test_a_memory_created_and_purged_in_one_batch_is_never_stored(sealed):
    ring = RecentEvents(sealed, 4)
    ring.add(USER, [event("a1", memory_id="a")])
    sealed.table.written.clear()
    added = ring.add(USER, [event("x1", memory_id="x", summary="Ana's secret."),
                            event("px", "purged", memory_id="x", summary="", reason="purge_at")])
    assert ids(added) == ["x1", "px"], "both were live events"
    assert ids(ring.events(USER)) == ["a1", "px"]
    assert "secret" not in repr(dict(sealed.items()))


def test_a_lost_chunk_is_left_out_and_the_next_write_rebuilds_the_ring(sealed):
    ring = RecentEvents(sealed, 6)
    for b in range(3):
        ring.add(USER, [event(f"e{b}a"), event(f"e{b}b")])
    del sealed.table[slot_key(USER, 1)]  # a write lost in a crash
    ring = RecentEvents(sealed, 6)  # the worker that recovers the table
    assert ids(ring.events(USER)) == ["e0a", "e0b", "e2a", "e2b"]
    assert not ring.read(USER).sound
    ring.add(USER, [event("e3")])
    assert ids(ring.events(USER)) == ["e0a", "e0b", "e2a", "e2b", "e3"]
    assert ring.read(USER).sound and len(ring.read(USER).chunks) == 1


def test_a_chunk_left_by_a_lost_head_write_is_not_read_as_live(sealed):
    ring = RecentEvents(sealed, 2)
    ring.add(USER, [event("e1")])
    ring.add(USER, [event("e2")])
    head = sealed.table[head_key(USER)]
    ring.add(USER, [event("e3")])  # overwrites slot 0
    sealed.table[head_key(USER)] = head  # ...but its head write was lost
    ring = RecentEvents(sealed, 2)  # the worker that recovers the table
    assert ids(ring.events(USER)) == ["e2"], "slot 0 holds chunk 2, not the chunk 0 the head names"
    ring.add(USER, [event("e3")])  # the replay
    assert ids(ring.events(USER)) == ["e2", "e3"]


def test_a_changed_size_rewrites_the_buffer_at_the_new_size(sealed):
    for i in range(8):
        RecentEvents(sealed, 8).add(USER, [event(f"e{i}")])
    ring = RecentEvents(sealed, 3)
    assert ids(ring.events(USER)) == ["e5", "e6", "e7"]
    ring.add(USER, [event("e8")])
    assert ids(ring.events(USER)) == ["e6", "e7", "e8"]
    assert len(sealed.table) == 2


def test_a_buffer_in_the_format_before_the_ring_is_read_and_converted_on_the_next_write(sealed):
    """Before the ring, the buffer was one sealed list under the user id (`user_is_key`)."""
    old = SealedTable(sealed.table, sealed.sealer, lambda key, value: key)
    old[USER] = [event(f"e{i}").model_dump(mode="json") for i in range(4)]
    ring = RecentEvents(sealed, 3)
    assert ids(ring.events(USER)) == ["e1", "e2", "e3"]
    assert ring.add(USER, [event("e3")]) == [], "a replay of an event in the old list"
    ring.add(USER, [event("e4")])
    assert ids(ring.events(USER)) == ["e2", "e3", "e4"]
    assert USER not in sealed.table, "the old list is gone"
    assert sorted(sealed.table) == sorted([head_key(USER), slot_key(USER, 0)])
    ring.add(USER, [event("e5")])
    assert ids(ring.events(USER)) == ["e3", "e4", "e5"]


def test_ring_keys_belong_to_their_user_and_no_user_id_is_one(sealed):
    ring = RecentEvents(sealed, 3)
    ring.add("bob", [event("e1").model_copy(update={"user_id": "bob"})])
    for key in sealed.table:
        assert TABLE_OWNERS["recent_events"](key, None) == "bob" and "/" in key
        assert unpack(sealed.table[key]).user_id == "bob", "sealed with bob's key"


class CountingReads(Recording):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def __getitem__(self, key: Any) -> Any:
        self.reads += 1
        return super().__getitem__(key)


def test_a_batch_reads_no_chunk_back_while_the_worker_knows_the_ring_as_stored():
    sealed = SealedTable(CountingReads(), Sealer(UserKeys({}, new_key())), TABLE_OWNERS["recent_events"])
    ring = RecentEvents(sealed, 50)
    for b in range(30):
        ring.add(USER, [event(f"e{b}")])
    sealed.table.reads = 0
    assert ids(ring.add(USER, [event("e29"), event("e30")])) == ["e30"], "a replay is still dropped"
    assert sealed.table.reads <= 2, "the head's stamp, not 30 chunks"
    other = RecentEvents(sealed, 50)  # another worker, before a rebalance brought the user back
    other.add(USER, [event("e31")])
    assert ids(ring.add(USER, [event("e31"), event("e32")])) == ["e32"], "its write is seen"
    assert ids(ring.events(USER))[-3:] == ["e30", "e31", "e32"]
    purge = event("p", "purged", memory_id="m", summary="", reason="purge_at")
    assert ids(ring.add(USER, [purge])) == ["p"]
    assert ids(ring.events(USER)) == ["p"], "a purge reads the events: all were memory m's"


def test_a_shred_is_seen_by_a_worker_that_knows_the_ring(sealed):
    ring = RecentEvents(sealed, 5)
    ring.add(USER, [event("e1")])
    sealed.sealer.keys.shred(USER, datetime(2024, 5, 2, tzinfo=timezone.utc))
    ring.add(USER, [event("e2")])
    assert ids(ring.events(USER)) == ["e2"], "not added to a ring that no longer opens"
    assert len(sealed.table) == 2


@pytest.mark.parametrize("seed", range(8))
def test_random_batches_keep_remembers_list_and_nothing_purged_stays_stored(seed):
    """Batches of new events, replays and purges (of one memory, of the user), through one
    worker or another (a worker that does not know the ring reads it back)."""
    import random

    rng = random.Random(seed)
    size = rng.choice([1, 2, 3, 5, 8])
    sealed = SealedTable(Recording(), Sealer(UserKeys({}, new_key())), TABLE_OWNERS["recent_events"])
    workers = [RecentEvents(sealed, size), RecentEvents(sealed, size)]
    expected: list[dict[str, Any]] = []
    sent: list[MemoryEvent] = []
    for n in range(60):
        batch = []
        for i in range(rng.choice([1, 1, 2, 3, 7])):
            roll, memory = rng.random(), f"m{rng.randrange(4)}"
            if roll < 0.15 and sent:
                batch.append(rng.choice(sent[-2 * size:]))  # a replay
            elif roll < 0.25:
                batch.append(event(f"p{n}-{i}", "purged", memory_id=memory, summary="",
                                   reason="purge_at"))
            elif roll < 0.27:
                batch.append(event(f"u{n}-{i}", "purged", memory_id=memory, summary=""))
            else:
                batch.append(event(f"e{n}-{i}", memory_id=memory, summary=f"secret {memory} {n}"))
        sent += batch
        added = rng.choice(workers).add(USER, batch)
        new = []
        for e in batch:
            updated = remember(expected, e, size)
            if updated is not None:
                expected, new = updated, [*new, updated[-1]]
        assert ids(added) == ids(new), (seed, n)
        assert ids(RecentEvents(sealed, size).events(USER)) == ids(expected), (seed, n)
        assert len(sealed.table) <= size + 1
        stored = [e for value in dict(sealed.items()).values() if isinstance(value, list)
                  for e in value[1]]
        new_ids = ids(new)
        for k, purge in enumerate(batch):
            if purge.kind != "purged" or purge.event_id not in new_ids \
                    or batch.index(purge) != k:
                continue  # not a purge this batch applied
            later = {e.event_id for e in batch[k + 1:]}
            reached = [e for e in stored if e["kind"] != "purged"
                       and (not purge.meta or e["memory_id"] == purge.memory_id)]
            assert all(e["event_id"] in later for e in reached), (seed, n)
