"""Blocked topics: facts about them are dropped at ingest (seed 004 §9).

Blocking or unblocking is announced like a memory change (event, audit entry, change-log line)
under a marker id `topic:<uuid>` made from the command that first blocked it, not a memory. The id carries nothing of the topic:
it is in the clear envelope of events and in table keys, where a user's words must never be.
"""
from __future__ import annotations


from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.memory.tables import topic_marker_id
from streams.memory.users import user_info
from topics.commands import Command
from topics.events import MemoryEvent


def set_topic_blocked(state: MemoryState, cmd: Command, blocked: bool) -> MemoryEvent:
    """Block or unblock `cmd.topic` for the user, and announce it."""
    topic = str(cmd.topic).strip().lower()
    info = user_info(state.tables.users, cmd.user_id, cmd.ts)
    topics = set(info.get("blocked_topics", []))
    info["blocked_topics"] = sorted(topics | {topic} if blocked else topics - {topic})
    markers = dict(info.get("topic_markers", {}))
    marker_id = markers.setdefault(topic, topic_marker_id(cmd.user_id, cmd.command_id))
    info["topic_markers"] = markers
    state.tables.users[cmd.user_id] = info
    marker = Memory(
        id=marker_id, user_id=cmd.user_id, type="semantic", category="Other",
        summary=f"{'Blocked' if blocked else 'Unblocked'} topic: {topic}", created_at=cmd.ts,
        updated_at=cmd.ts, last_accessed=cmd.ts, version=len(state.history(marker_id)) + 1,
    )
    return state.announce("updated", marker, cmd.thread_id, cmd.ts,
                          {"subject": "blocked_topic", "action": cmd.kind, "topic": topic},
                          actor=cmd.actor)
