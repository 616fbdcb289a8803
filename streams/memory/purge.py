"""Purging a user (the registry's `DELETE /v1/users/{id}`, a `purge_user` command)."""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from streams.memory import ids
from streams.memory.tables import key_text, topic_marker_id
from topics.events import MemoryEvent

if TYPE_CHECKING:
    from streams.memory.state import MemoryState


def purge_user(state: MemoryState, user_id: str, thread_id: str, ts: datetime) -> list[MemoryEvent]:
    """Remove every memory of the user; the events and audit tombstones carry no content."""
    events = []
    for memory in list(state.index.user(user_id).docs.values()):
        state.tables.memories.pop(memory.id, None)
        event = MemoryEvent(
            event_id=ids.event_id(memory.id, "purged", memory.version + 1), kind="purged",
            user_id=user_id, thread_id=thread_id, memory_id=memory.id,
            rev=state.revisions.next(user_id, thread_id), ts=ts, summary="", category="", meta={},
        )
        state.audit.record(event, memory, None, "user")
        events.append(event)
    state.index.drop_user(user_id)
    state.tables.users.pop(user_id, None)
    _scrub_user(state, user_id)
    return events


def _scrub_user(state: MemoryState, user_id: str) -> None:
    """Drop the content a purged user left in the thread logs and applied records.

    Revisions stay (they are content-free), and applied records stay as content-free
    markers, so a replay of the user's old turns does not bring the memories back.
    """
    state.revisions.scrub_user(user_id)
    audit = state.tables.audit
    prefix = topic_marker_id(user_id, "")
    for key in [k for k in audit.keys() if key_text(k).startswith(prefix)]:
        del audit[key]
    applied = state.tables.applied
    for key, record in list(applied.items()):
        if not isinstance(record, dict):
            continue  # e.g. the touch command's list of seen ids (streams/memory/access.py)
        if any(e.get("user_id") == user_id for e in record.get("events", [])):
            applied[key] = {"outcome": "purged", "memory_id": record["memory_id"], "events": []}
