"""What each candidate and command did, kept in the `applied` table.

Processing is at-least-once: a record can arrive again after a crash or a rebalance. Its
outcome and the events it produced are remembered under a deterministic key, so a replay
changes nothing and re-sends the identical events (same `event_id`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from streams.memory.tables import Table
from topics.events import MemoryEvent


@dataclass
class Applied:
    """What a candidate or command did: its outcome, the memory it touched, the events to send."""

    outcome: str  # created | updated | superseded | duplicate (candidates); applied (commands)
    memory_id: str
    events: list[MemoryEvent] = field(default_factory=list)
    similarity: float | None = None
    replayed: bool = False


def prior(applied: Table, key: str) -> Applied | None:
    """The outcome recorded under `key` the first time, marked as a replay; None if new.

    A record that is there but no longer opens belongs to a purged user: the replay changes
    nothing either (outcome "purged", no events).
    """
    if key not in applied:
        return None
    record = applied.get(key)
    if record is None:
        return Applied("purged", "", [], replayed=True)
    events = [MemoryEvent.model_validate(e) for e in record.get("events", [])]
    return Applied(record["outcome"], record["memory_id"], events, replayed=True)


def remember(applied: Table, key: str, result: Applied) -> None:
    """Record `result` under `key`, events included, for replays."""
    applied[key] = {"outcome": result.outcome, "memory_id": result.memory_id,
                    "events": [e.model_dump(mode="json") for e in result.events]}
