"""A rebuild started while a stage processes a record indexes every owned partition's memories,
not only that record's (issue 47, found by `bench restart`).

Faust's RocksDB store answers a read made in the scope of a record (its current event) from
that record's partition alone. After a restart the first use of the index is often a stage's
record (a replayed `memory.commands` record, a dedup batch): the index it rebuilt held one
partition's memories, and every other user's index was empty until the next rebalance.
`ScopedReads` reads as Faust's store does; the rebuild must see through it.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from streams.app.faust_compat import event_scope
from streams.memory.candidates import apply_candidate
from streams.memory.state import MemoryState
from streams.memory.store import MemoryStore
from streams.memory.vector_index import VectorIndex
from streams.pipeline.tables import stage_tables
from streams.privacy.crypto import new_key
from streams.privacy.sealed import TABLE_OWNERS
from streams.privacy.table_values import unpack
from tests.unit.memory.test_memory_state import cand
from tests.unit.memory.test_store_rebuild import CONFIG, DIM, vec
from topics.turns import Turn

USERS = ("ana", "ben", "cai", "dee")
_MISSING = object()


class ScopedReads(dict):
    """A raw table whose reads, in the scope of a record (`faust.current_event()`), look only in
    that record's partition, as Faust's RocksDB store's do; a user's partition is their place in
    `USERS`."""

    @staticmethod
    def _partition(value: Any) -> int:
        return USERS.index(unpack(value).user_id)

    def _visible(self, key: Any) -> bool:
        import faust

        event = faust.current_event()
        return event is None or self._partition(dict.__getitem__(self, key)) == event.message.partition

    def __getitem__(self, key: Any) -> Any:
        if not dict.__contains__(self, key) or not self._visible(key):
            raise KeyError(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


@dataclass
class _Message:
    partition: int


@dataclass
class _Event:
    """What a Faust event offers a store read: its message's partition."""

    message: _Message


def a_store() -> MemoryStore:
    raw = {name: ScopedReads() if name == "memories" else {} for name in TABLE_OWNERS}
    tables = stage_tables(raw, {}, new_key()).memory
    state = MemoryState(tables, VectorIndex(DIM), CONFIG)
    for user in USERS:
        for i in range(3):
            c = cand(f"{user}{i}", f"{user} has {i} books.")
            c = c.model_copy(update={"turn": Turn.model_validate({**c.turn.model_dump(), "user_id": user})})
            assert apply_candidate(state, c, vec()).outcome == "created"
    tables.flush()
    return MemoryStore(tables, lambda: CONFIG)


def test_the_table_reads_as_faust_does_in_a_records_scope():
    store = a_store()
    keys = list(store.tables.memories)
    event = _Event(_Message(partition=0))
    with event_scope(event):  # type: ignore[arg-type]  # what the store reads of an event
        readable = [key for key in keys if store.tables.memories.get(key) is not None]
    assert len(keys) == 12 and len(readable) == 3, "in a record's scope, one partition reads"


def test_a_rebuild_in_a_records_scope_indexes_every_partition():
    store = a_store()
    event = _Event(_Message(partition=0))

    async def in_a_record() -> None:
        with event_scope(event):  # type: ignore[arg-type]
            await store.ready(slice_size=2)

    asyncio.run(in_a_record())
    assert {user: len(store.user_index(user)) for user in USERS} == dict.fromkeys(USERS, 3)


def test_a_blocking_rebuild_in_a_records_scope_indexes_every_partition():
    store = a_store()
    with event_scope(_Event(_Message(partition=2))):  # type: ignore[arg-type]
        counts = {user: len(store.user_index(user)) for user in USERS}
    assert counts == dict.fromkeys(USERS, 3)
