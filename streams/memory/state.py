"""The memories of the users one worker owns: what the stages and the web routes read, and the
two writes every change shares.

`MemoryState` is a plain repository of the tables and the vector index: it knows no operation.
Each kind of change lives in its own module above it, takes it and imports it: a candidate
(`streams.memory.candidates.apply_candidate`), a command (`streams.memory.commands.apply_command`),
a purge (`streams.memory.purge`), consent (`streams.memory.consent`), blocked topics
(`streams.memory.blocked_topics`), `related_to` edges (`streams.memory.linking`), a supersede
(`streams.memory.supersede`), reads recorded (`streams.memory.access`). Every change is stored
with `store` and announced with `announce` (the event, its audit entry, its change-log line).
Sending the events is the caller's job.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import numpy as np

from streams.memory import ids, users
from streams.memory.audit import AuditLog
from streams.memory.config import CommandConfig, DedupConfig
from streams.memory.documents import applied_key
from streams.memory.model import Memory
from streams.memory.revisions import CHANGE_LOG_SIZE, Revisions
from streams.memory.tables import MemoryTables
from streams.memory.vector_index import VectorIndex, encode_vector
from topics.candidates import Candidate
from topics.events import EventKind, MemoryEvent


class MemoryState:
    """Memories, applied records, users, revisions and audit of the owned partitions, with the
    vector index over the memories."""

    def __init__(self, tables: MemoryTables, index: VectorIndex, config: DedupConfig,
                 commands: CommandConfig = CommandConfig(),
                 change_log_size: int = CHANGE_LOG_SIZE) -> None:
        self.tables = tables
        self.index = index
        self.config = config
        self.commands = commands
        self.revisions = Revisions(tables.thread_revs, change_log_size)
        self.audit = AuditLog(tables.audit)

    def over(self, tables: MemoryTables) -> MemoryState:
        """The same state read and written through `tables` (e.g. writes held back)."""
        return MemoryState(tables, self.index, self.config, self.commands, self.revisions.log_size)

    # --- reads -------------------------------------------------------------------------
    def memory(self, memory_id: str) -> Memory | None:
        raw = self.tables.memories.get(memory_id)
        return Memory.model_validate(raw) if raw is not None else None

    def is_applied(self, candidate: Candidate) -> bool:
        return applied_key(candidate) in self.tables.applied

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Audit entries of one memory, oldest first."""
        return self.audit.history(memory_id)

    def blocked_topics(self, user_id: str) -> list[str]:
        return users.blocked_topics(self.tables.users, user_id)

    def user_clock(self, user_id: str) -> datetime | None:
        return users.user_clock(self.tables.users, user_id)

    def current_rev(self, user_id: str, thread_id: str) -> int:
        return self.revisions.current(user_id, thread_id)

    def changes_since(self, user_id: str, thread_id: str, rev: int) -> list[dict[str, Any]]:
        """The thread's logged changes after revision `rev`, newest first."""
        return self.revisions.changes_since(user_id, thread_id, rev)

    # --- what every change shares ------------------------------------------------------
    def store(self, memory: Memory, vector: np.ndarray | None = None) -> None:
        """Write a memory's document, and refresh it in the index (with its new vector, if
        its summary changed). The document always carries its vector (a restart rebuilds the
        index from the documents): `vector`, else the index's copy for a document taken from
        the index, which keeps none."""
        index = self.index.user(memory.user_id)
        if vector is not None:
            memory = memory.model_copy(update={"embedding_b64": encode_vector(vector)})
        elif memory.embedding_b64 is None:
            kept = index.vector_b64(memory.id)
            if kept is not None:
                memory = memory.model_copy(update={"embedding_b64": kept})
        if memory.context_b64 is None and (context := index.context_b64(memory.id)) is not None:
            memory = memory.model_copy(update={"context_b64": context})
        self.tables.memories[memory.id] = memory.model_dump(mode="json")
        if vector is None:
            index.update_doc(memory)
        else:
            index.upsert(memory, vector)

    def reindex(self, made: Iterable[tuple[str, Any]]) -> None:
        """Show in the index the documents a replay wrote again (`applied.redo`): the index
        serves what the table holds."""
        for name, value in made:
            if name == "memories":
                self.index.add(Memory.model_validate(value))

    def announce(self, kind: EventKind, memory: Memory, thread_id: str, ts: datetime,
                 meta: dict[str, Any], old: Memory | None = None,
                 actor: str = "system") -> MemoryEvent:
        """Announce a change: the event (next revision of the thread), its audit entry, and its
        line in the thread's change log."""
        rev = self.revisions.next(memory.user_id, thread_id)
        event = MemoryEvent(
            event_id=ids.event_id(memory.id, kind, memory.version), kind=kind,
            user_id=memory.user_id, thread_id=thread_id, memory_id=memory.id, rev=rev, ts=ts,
            summary=memory.summary, category=memory.category, meta={"type": memory.type, **meta},
        )
        self.audit.record(event, memory, old, actor)
        self.revisions.log_change(thread_id, rev, kind, memory)
        return event
