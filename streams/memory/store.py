"""The memory tables of the partitions a worker owns, and the vector index kept over them.

The index lives in RAM only. It is rebuilt from the `memories` table whenever it may no longer
match it: at start and after every table recovery (a rebalance moves partitions, and their
memories, between workers). The stages and the web routes of one worker share one store.

The stages and routes `await ready()` first, which rebuilds a stale index in slices with the
event loop free between them: a worker holding a million memories takes a while to index
them, and a rebuild that held the loop that long would stop its heartbeats and cost it its
place in the consumer group (then a rebalance, then another rebuild).

A rebuild reads the documents outside the scope of the record being processed, if any
(`_unscoped`): the first use after a restart is often a stage's record, and a Faust table read
in the scope of a record looks only in that record's partition, so an index rebuilt there held
one partition's memories, and the other users' none, until the next rebalance (bench restart,
issue 47).
"""
from __future__ import annotations

import asyncio
import contextvars
import ctypes
import ctypes.util
import gc
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

import numpy as np
from pydantic import ValidationError

from streams.memory import users
from streams.memory.config import DedupConfig
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.memory.tables import MemoryTables
from streams.memory.vector_index import UserIndex, VectorIndex, decode_vector
from streams.tables import key_text

log = logging.getLogger(__name__)
T = TypeVar("T")
try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
except OSError:  # pragma: no cover - no C library to load (not Linux/glibc)
    _LIBC = None
REBUILD_SLICE = 500
"""Memories indexed between two yields to the event loop (about 60 ms of work, more on a
busy machine: well inside the 1 s heartbeat interval)."""


class MemoryStore:
    """`MemoryTables` plus the vector index over them; `config` is read when first needed
    (it names the embedder's profile, whose model loads in seconds)."""

    def __init__(self, tables: MemoryTables, config: Callable[[], DedupConfig]) -> None:
        self.tables = tables
        self._config = config
        self._index: VectorIndex | None = None
        self._stale = True
        self._rebuilding = asyncio.Lock()
        self._generation = 0
        """Counts `mark_stale` calls: a rebuild that saw it change is out of date."""

    def mark_stale(self) -> None:
        """The tables changed under the index (a recovery): rebuild it before the next use."""
        self._stale = True
        self._generation += 1

    def index(self) -> VectorIndex:
        """The vector index over the owned memories, rebuilt first (holding the event loop)
        if stale: callers on the event loop `await ready()` before."""
        if self._stale or self._index is None:
            generation = self._generation
            fresh = VectorIndex(self._config().profile.dim)
            count = sum(fresh.add(memory, vector) for memory, vector in self._documents())
            for user_index in fresh.users().values():
                user_index.fit()
            self._installed(fresh, count, generation)
        assert self._index is not None
        return self._index

    async def ready(self, slice_size: int = REBUILD_SLICE) -> None:
        """Rebuild the index if stale, yielding to the event loop every `slice_size` memories.
        Concurrent callers wait for the same rebuild; one marked stale again meanwhile (another
        rebalance) starts over."""
        async with self._rebuilding:
            if self._stale or self._index is None:
                with _collector_paused():
                    await self._rebuild(slice_size)

    async def _rebuild(self, slice_size: int) -> None:
        """Build a fresh index in slices until one completes with the tables unchanged under it."""
        while self._stale or self._index is None:
            generation = self._generation
            fresh = VectorIndex(self._config().profile.dim)
            count = 0
            for position, (memory, vector) in enumerate(self._documents(), start=1):
                count += fresh.add(memory, vector)
                if position % slice_size == 0:
                    await asyncio.sleep(0)
                    if generation != self._generation:
                        break
            else:
                await _fitted(fresh, slice_size)
                replaced = self._index
                self._installed(fresh, count, generation)
                if replaced is not None:
                    await _release(replaced, slice_size)

    def _installed(self, fresh: VectorIndex, count: int, generation: int) -> None:
        """Use `fresh`, built from the tables as of `generation`; still stale if they changed
        under it since."""
        self._index = fresh
        release_freed_heap()
        self._stale = generation != self._generation
        log.info("vector index rebuilt from the memories table: %d memories", count)

    def _documents(self) -> Iterator[tuple[Memory, np.ndarray | None]]:
        """The stored memories that validate, each with its vector, taken out of the document
        before validation (the index keeps it in its matrix only). One that does not validate
        (written by another version, damaged) is left out of the index and logged by id, never
        failing the rebuild."""
        for key, raw in _unscoped(self.tables.memories.items()):
            try:
                encoded = raw.pop("embedding_b64", None) if isinstance(raw, dict) else None
                vector = decode_vector(encoded) if isinstance(encoded, str) and encoded else None
                yield Memory.model_validate(raw), vector
            except (ValidationError, ValueError) as exc:
                errors = exc.error_count() if isinstance(exc, ValidationError) else 1
                log.error("memory %s does not validate and is not searchable (%d errors)",
                          key_text(key), errors)

    def state(self) -> MemoryState:
        """The owned memories, to read and change."""
        return MemoryState(self.tables, self.index(), self._config())

    # --- reads the web routes need ---------------------------------------------------------
    def user_index(self, user_id: str) -> UserIndex:
        return self.index().user(user_id)

    def user_memories(self, user_id: str) -> list[Memory]:
        """Every memory of the user in any state (the registry filters)."""
        return list(self.user_index(user_id).docs.values())

    def user_clock(self, user_id: str) -> datetime | None:
        """The user's clock: the latest event time of their turns."""
        return users.user_clock(self.tables.users, user_id)


def _unscoped(items: Iterator[T]) -> Iterator[T]:
    """`items`, each made in an empty context: none of the caller's context variables is set,
    Faust's current event included, whose partition a Faust table read looks in alone (module
    doc). What the caller reads (documents of every owned partition) needs none of them."""
    context = contextvars.Context()
    while True:
        try:
            item = context.run(next, items)
        except StopIteration:
            return
        yield item


def release_freed_heap() -> None:
    """Give the heap a rebuild freed back to the system (glibc keeps it otherwise: the
    documents decoded and dropped, the buffers outgrown, stay in the worker's RSS). A no-op
    where the C library has no `malloc_trim`."""
    trim = getattr(_LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)


async def _fitted(index: VectorIndex, slice_size: int) -> None:
    """`UserIndex.fit` every user of a rebuilt index, yielding to the loop every `slice_size`
    rows copied."""
    copied = 0
    for user_index in list(index.users().values()):
        user_index.fit()
        copied += len(user_index)
        if copied >= slice_size:
            copied = 0
            await asyncio.sleep(0)


async def _release(index: VectorIndex, slice_size: int) -> None:
    """Free a replaced index a few users at a time: dropped at once, a million memories'
    objects took seconds to deallocate, with the event loop held."""
    users = index.users()
    for position, user_id in enumerate(list(users), start=1):
        del users[user_id]
        if position % max(1, slice_size // 100) == 0:
            await asyncio.sleep(0)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while the index is built, and the built index frozen out of
    its scans: a rebuild makes millions of objects, and a full collection over them held the
    event loop for seconds (10 s at 1,000,000 memories), as long as the heartbeat timeout. The
    index's objects hold no reference cycles; reference counting frees them when replaced."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
