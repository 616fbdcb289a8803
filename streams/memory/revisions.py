"""Per-thread revisions and change logs: what the delta header reads (docs/architecture.md#write-path).

One record per thread in the `thread_revs` table: `rev`, incremented on every change announced
in the thread (one writer per partition, so the increment is atomic); `changes`, the last
changes, newest last; and `turn`/`memories`, what the thread's latest turn wrote, which is what
"don't remember this" deletes.
"""
from __future__ import annotations

from typing import Any

from streams.memory.model import Memory
from streams.memory.tables import Table, thread_key
from topics.turns import Turn

CHANGE_LOG_SIZE = 20


class Revisions:
    """The `thread_revs` table, one thread at a time."""

    def __init__(self, table: Table, log_size: int = CHANGE_LOG_SIZE) -> None:
        self.table = table
        self.log_size = log_size

    def thread(self, user_id: str, thread_id: str) -> dict[str, Any]:
        """A copy of the thread's record (a fresh one when the thread has none yet)."""
        return dict(self.table.get(thread_key(user_id, thread_id))
                    or {"rev": 0, "turn": None, "memories": [], "changes": []})

    def current(self, user_id: str, thread_id: str) -> int:
        return int(self.thread(user_id, thread_id)["rev"])

    def next(self, user_id: str, thread_id: str) -> int:
        """Increment and return the thread's revision."""
        thread = self.thread(user_id, thread_id)
        thread["rev"] += 1
        self.table[thread_key(user_id, thread_id)] = thread
        return int(thread["rev"])

    def log_change(self, thread_id: str, rev: int, kind: str, memory: Memory) -> None:
        """Add a line to the thread's change log, keeping the last `log_size`."""
        thread = self.thread(memory.user_id, thread_id)
        thread["changes"] = [*thread.get("changes", []), {
            "rev": rev, "kind": kind, "memory_id": memory.id, "summary": memory.summary,
            "category": memory.category, "importance": memory.importance,
        }][-self.log_size:]
        self.table[thread_key(memory.user_id, thread_id)] = thread

    def changes_since(self, user_id: str, thread_id: str, rev: int) -> list[dict[str, Any]]:
        """The thread's logged changes after revision `rev`, newest first."""
        changes = self.thread(user_id, thread_id).get("changes", [])
        return sorted((c for c in changes if c["rev"] > rev), key=lambda c: -c["rev"])

    def note_turn_memory(self, turn: Turn, memory_id: str) -> None:
        """Remember that the thread's latest turn wrote `memory_id`."""
        thread = self.thread(turn.user_id, turn.thread_id)
        if thread["turn"] != turn.turn_id:
            thread["turn"], thread["memories"] = turn.turn_id, []
        if memory_id not in thread["memories"]:
            thread["memories"] = [*thread["memories"], memory_id]
        self.table[thread_key(turn.user_id, turn.thread_id)] = thread

    def last_turn_memories(self, user_id: str, thread_id: str, before_turn: str | None) -> list[str]:
        """Memories written by the thread's latest turn (other than `before_turn`)."""
        thread = self.thread(user_id, thread_id)
        return [] if thread["turn"] == before_turn else list(thread["memories"])
