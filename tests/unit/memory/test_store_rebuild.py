"""`MemoryStore.ready()` rebuilds a stale vector index in slices, with the event loop free
between them (a worker holding a million memories must keep heartbeating to its group)."""
from __future__ import annotations

import asyncio

import numpy as np

from streams.memory.candidates import apply_candidate
from streams.memory.state import MemoryState
from streams.memory.store import MemoryStore
from streams.memory.vector_index import VectorIndex
from streams.pipeline.tables import stage_tables
from streams.privacy.crypto import new_key
from streams.privacy.sealed import TABLE_OWNERS
from streams.providers.embedders import EmbedderProfile
from tests.unit.memory.test_memory_state import cand
from tests import defaults

DIM = 64
CONFIG = defaults.dedup(EmbedderProfile("test", DIM, 0.90, 0.80, 0.92, 0.85))
RNG = np.random.default_rng(7)


def vec() -> np.ndarray:
    """A random unit vector: in 64 dimensions, far from every other (no merges)."""
    v = RNG.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def filled(count: int) -> MemoryState:
    tables = stage_tables({name: {} for name in TABLE_OWNERS}, {}, new_key()).memory
    s = MemoryState(tables, VectorIndex(DIM), CONFIG)
    for i in range(count):
        assert apply_candidate(s, cand(str(i), f"Ana has {i} books."), vec()).outcome == "created"
    return s


def test_a_rebuild_lets_other_tasks_run_between_slices():
    s = filled(40)
    store = MemoryStore(s.tables, lambda: CONFIG)
    ticks: list[int] = []

    async def scenario() -> None:
        done = asyncio.Event()

        async def ticker() -> None:
            while not done.is_set():
                ticks.append(len(ticks))
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        ticks.clear()
        await store.ready(slice_size=5)
        done.set()
        await task

    asyncio.run(scenario())
    assert len(ticks) >= 40 // 5 - 1, "the loop ran other tasks during the rebuild"
    assert len(store.user_index("u")) == 40


def test_a_rebuild_overtaken_by_a_recovery_starts_over():
    """A memory that reaches the table mid-rebuild (a recovery marks the index stale) is in
    the index the rebuild leaves."""
    s = filled(20)
    store = MemoryStore(s.tables, lambda: CONFIG)

    async def scenario() -> None:
        async def recovery() -> None:
            late = MemoryState(s.tables, VectorIndex(DIM), CONFIG)
            apply_candidate(late, cand("late", "Ana moved to Porto."), vec())
            store.mark_stale()

        rebuild = asyncio.create_task(store.ready(slice_size=5))
        await asyncio.sleep(0)  # the rebuild has taken its first slice
        await recovery()
        await rebuild

    asyncio.run(scenario())
    summaries = {m.summary for m in store.user_memories("u")}
    assert "Ana moved to Porto." in summaries and len(summaries) == 21


def test_concurrent_callers_share_one_rebuild(monkeypatch):
    s = filled(10)
    store = MemoryStore(s.tables, lambda: CONFIG)
    built: list[str] = []
    original = VectorIndex.add

    def counting(self: VectorIndex, memory, vector=None):  # type: ignore[no-untyped-def]
        built.append(memory.id)
        return original(self, memory, vector)

    monkeypatch.setattr(VectorIndex, "add", counting)

    async def scenario() -> None:
        await asyncio.gather(store.ready(slice_size=3), store.ready(slice_size=3))

    asyncio.run(scenario())
    assert len(built) == 10
