"""Recording reads: a `touch` command refreshes `last_accessed` and `access_count` (docs/architecture.md#read-path).

Pure logic over the tables (Faust tables in the worker, dicts in tests). Runs in the commands
stage, on the partition that owns the user, so the read is changelogged like any other write;
the web handler only sends the command.
"""
from __future__ import annotations

import uuid
from collections.abc import MutableMapping, Sequence
from datetime import datetime
from typing import Any

from streams.memory.model import Memory
from streams.memory.tables import touch_key
from streams.memory.vector_index import VectorIndex
from topics.commands import Command

# How many recent touch command ids are remembered per user: a redelivered touch (at-least-once)
# arrives within the uncommitted window, far inside this.
SEEN_TOUCHES = 256


def touch(user_id: str, memory_ids: Sequence[str], read_time: datetime, agent: str) -> Command:
    """The `touch` command recording that `agent` read `memory_ids` at `read_time` (the
    query's event time, never the wall clock)."""
    return Command(command_id=f"touch-{uuid.uuid4().hex}", kind="touch", user_id=user_id,
                   ts=read_time, thread_id="queries", memory_ids=list(memory_ids),
                   actor=f"agent:{agent}")


def record_reads(memories: MutableMapping[Any, Any], applied: MutableMapping[Any, Any],
                 index: VectorIndex, command: Command) -> list[str]:
    """Apply one touch once (by `command_id`); return the ids of the memories refreshed.

    Only the user's own active and archived memories are refreshed (an archived hit counts as
    an access: the lifecycle brings it back to the active tier); ids that are gone (purged,
    deleted since the read) or belong to someone else are skipped, not an error.
    """
    key = touch_key(command.user_id)
    seen = list(applied.get(key) or [])
    if command.command_id in seen:
        return []
    touched = []
    for memory_id in dict.fromkeys(command.memory_ids):
        raw = memories.get(memory_id)
        if raw is None:
            continue
        memory = Memory.model_validate(raw)
        if memory.user_id != command.user_id or not (memory.is_visible or memory.is_archived):
            continue
        read = memory.model_copy(update={
            "last_accessed": max(memory.last_accessed, command.ts),
            "access_count": memory.access_count + 1,
        })
        memories[memory_id] = read.model_dump(mode="json")
        index.user(command.user_id).update_doc(read)
        touched.append(memory_id)
    applied[key] = [*seen, command.command_id][-SEEN_TOUCHES:]
    return touched
