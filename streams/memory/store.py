"""The memory tables of the partitions a worker owns, and the vector index kept over them.

The index lives in RAM only. It is rebuilt from the `memories` table whenever it may no longer
match it: at start and after every table recovery (a rebalance moves partitions, and their
memories, between workers). The stages and the web routes of one worker share one store.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import datetime

from pydantic import ValidationError

from streams.memory import users
from streams.memory.dedup import DedupConfig
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.memory.tables import MemoryTables, key_text
from streams.memory.vector_index import UserIndex, VectorIndex

log = logging.getLogger(__name__)


class MemoryStore:
    """`MemoryTables` plus the vector index over them; `config` is read when first needed
    (it names the embedder's profile, whose model loads in seconds)."""

    def __init__(self, tables: MemoryTables, config: Callable[[], DedupConfig]) -> None:
        self.tables = tables
        self._config = config
        self._index: VectorIndex | None = None
        self._stale = True

    def mark_stale(self) -> None:
        """The tables changed under the index (a recovery): rebuild it before the next use."""
        self._stale = True

    def index(self) -> VectorIndex:
        """The vector index over the owned memories, rebuilt first if stale."""
        if self._index is None:
            self._index = VectorIndex(self._config().profile.dim)
        if self._stale:
            count = self._index.rebuild(self._documents())
            log.info("vector index rebuilt from the memories table: %d memories", count)
            self._stale = False
        return self._index

    def _documents(self) -> Iterator[Memory]:
        """The stored memories that validate; one that does not (written by another version,
        damaged) is left out of the index and logged by id, never failing the rebuild."""
        for key, raw in self.tables.memories.items():
            try:
                yield Memory.model_validate(raw)
            except ValidationError as exc:
                log.error("memory %s does not validate and is not searchable (%d errors)",
                          key_text(key), exc.error_count())

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
