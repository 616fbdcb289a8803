"""Purging a user (the registry's `DELETE /v1/users/{id}`, a `purge_user` command).

The user's memories leave the tables and the index, and the user's data key is deleted
(`streams.privacy.user_keys.UserKeys.shred`): everything else memstream keeps of the user —
audit history, change logs, turn buffers, applied records, recent events, and every copy in the
topics it writes — was sealed with that key and stops opening at once. Nothing of another user
is touched: every key written here is the user's own. The applied records stay (unreadable), so
a replay of the user's old turns brings nothing back; what is written after the purge (the
content-free tombstones below) is sealed with a new key.
"""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from streams.memory import ids
from topics.events import MemoryEvent

if TYPE_CHECKING:
    from streams.memory.state import MemoryState


def purge_user(state: MemoryState, user_id: str, thread_id: str, ts: datetime) -> list[MemoryEvent]:
    """Remove every memory of the user and delete the user's data key; return one content-free
    `purged` event per memory (their audit keeps a content-free tombstone)."""
    memories = list(state.index.user(user_id).docs.values())
    for memory in memories:
        state.tables.memories.pop(memory.id, None)
    state.index.drop_user(user_id)
    state.tables.users.pop(user_id, None)
    if state.tables.keys is not None:
        state.tables.keys.shred(user_id, ts)
    events = []
    for memory in memories:
        event = MemoryEvent(
            event_id=ids.event_id(memory.id, "purged", memory.version + 1), kind="purged",
            user_id=user_id, thread_id=thread_id, memory_id=memory.id,
            rev=state.revisions.next(user_id, thread_id), ts=ts, summary="", category="", meta={},
        )
        state.audit.record(event, memory, None, "user")
        events.append(event)
    return events
