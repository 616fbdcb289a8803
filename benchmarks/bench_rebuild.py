"""`memstream bench rebuild`: rebuilding the vector index of N memories, and what it costs the
event loop and the worker's RAM.

After a rebalance a worker rebuilds its in-RAM index from its `memories` table (the index is a
cache: `streams.memory.store`). The worker's consumer group hears from it every
`broker_heartbeat_interval` (1 s) and drops it after `broker_session_timeout` (10 s) of
silence; heartbeats are tasks on the same event loop as the rebuild. So what matters is the
longest time the loop is held, not the rebuild's total time. This bench fills a sealed
`memories` table (the worker's own wrapper, over a dict instead of RocksDB) with N memories of
many users, then measures, in one process:

- the old way: `MemoryStore.index()` rebuilding in one go (the loop is held for all of it);
- the worker's way: `await MemoryStore.ready()` rebuilding in slices, while a probe task that
  asks to wake every 10 ms records how late it woke: the longest of those delays is the
  longest the loop was held;
- the resident memory the index adds per memory (RSS before and after the rebuild).

Documents are `bench query`'s synthetic memories (a base set repeated under new ids and users),
with random unit vectors: a rebuild's cost does not depend on the vectors' content.
"""
from __future__ import annotations

import asyncio
import gc
import os
import time
from dataclasses import replace
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table as RichTable

from benchmarks.bench_query import synthetic_memories
from benchmarks.bench_stages import process_rss
from streams.memory.config import DedupConfig
from streams.settings import ConsentSettings, DedupSettings
from streams.memory.store import REBUILD_SLICE, MemoryStore
from streams.memory.vector_index import encode_vector
from streams.pipeline.tables import stage_tables
from streams.privacy.crypto import new_key
from streams.privacy.sealed import TABLE_OWNERS
from streams.providers.embedders import MINILM_INT8_PROFILE

SESSION_TIMEOUT_S = 10.0
"""The worker's `broker_session_timeout` (streams/app/factory.py)."""
HEARTBEAT_S = 1.0
"""The worker's `broker_heartbeat_interval`."""
PROBE_INTERVAL_S = 0.01
BASE_DOCUMENTS = 5000


def filled_store(memories: int, users: int, seed: int = 5) -> MemoryStore:
    """A store over a sealed dict `memories` table holding `memories` documents of `users`."""
    rng = np.random.default_rng(seed)
    base = [m.model_dump(mode="json") for m in synthetic_memories(min(memories, BASE_DOCUMENTS))]
    tables = stage_tables({name: {} for name in TABLE_OWNERS}, {}, new_key()).memory
    dim = MINILM_INT8_PROFILE.dim
    for i in track(range(memories), description="sealing documents into the table"):
        vector = rng.standard_normal(dim).astype(np.float32)
        doc = {**base[i % len(base)], "id": f"m{i:07d}", "user_id": f"user-{i % users:05d}",
               "relations": {}, "embedding_b64": encode_vector(vector / np.linalg.norm(vector))}
        tables.memories[doc["id"]] = doc
    config = replace(DedupConfig.of(MINILM_INT8_PROFILE, DedupSettings(), ConsentSettings()),
                     write_rate_limit_per_hour=0)
    return MemoryStore(tables, lambda: config)


async def sliced_rebuild(store: MemoryStore, slice_size: int) -> dict[str, float]:
    """`store.ready()` timed, beside the longest delay of a probe that wakes every 10 ms."""
    delays: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            asked = time.perf_counter()
            await asyncio.sleep(PROBE_INTERVAL_S)
            delays.append(time.perf_counter() - asked - PROBE_INTERVAL_S)

    task = asyncio.create_task(probe())
    await asyncio.sleep(0)
    started = time.perf_counter()
    store.mark_stale()
    await store.ready(slice_size)
    took = time.perf_counter() - started
    done.set()
    await task
    return {"seconds": round(took, 2), "longest_loop_stall_ms": round(1000 * max(delays, default=0), 1),
            "probe_wakeups": len(delays)}


def run_rebuild_bench(memories: int, users: int, slice_size: int = REBUILD_SLICE) -> dict[str, Any]:
    """The figures of one run (see the module docstring)."""
    store = filled_store(memories, users)
    gc.collect()
    before = process_rss(os.getpid())
    started = time.perf_counter()
    store.mark_stale()
    count = sum(len(store.user_index(f"user-{u:05d}")) for u in range(users))
    blocking = time.perf_counter() - started
    gc.collect()
    after = process_rss(os.getpid())
    sliced = asyncio.run(sliced_rebuild(store, slice_size))
    grown = None if before is None or after is None else after - before
    return {
        "memories": memories, "users": users, "indexed": count, "slice_size": slice_size,
        "blocking_rebuild_s": round(blocking, 2),
        "sliced_rebuild": sliced,
        "session_timeout_s": SESSION_TIMEOUT_S,
        "stall_within_heartbeat_interval": sliced["longest_loop_stall_ms"] / 1000 < HEARTBEAT_S,
        "stall_within_session_timeout": sliced["longest_loop_stall_ms"] / 1000 < SESSION_TIMEOUT_S,
        "index_rss_bytes_per_memory": round(grown / memories, 1) if grown is not None else None,
    }


def render(report: dict[str, Any], console: Console) -> None:
    table = RichTable(title=f"index rebuild: {report['memories']:,} memories of {report['users']:,} users")
    table.add_column("what")
    table.add_column("figure", justify="right")
    sliced = report["sliced_rebuild"]
    table.add_row("one-go rebuild (loop held throughout)", f"{report['blocking_rebuild_s']} s")
    table.add_row(f"sliced rebuild ({report['slice_size']} per slice)", f"{sliced['seconds']} s")
    table.add_row("longest event-loop stall while slicing", f"{sliced['longest_loop_stall_ms']} ms")
    table.add_row("consumer session timeout", f"{report['session_timeout_s']} s")
    table.add_row("index RAM per memory (RSS growth)", f"{report['index_rss_bytes_per_memory']} B")
    console.print(table)
