"""`memory.events`: every visible change of a memory (SPEC §2)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from topics.times import EventTime

EventKind = Literal[
    "candidate",
    "created",
    "updated",
    "merged",
    "superseded",
    "linked",
    "soft_deleted",
    "restored",
    "deleted",
    "purged",
    "error",
]


class MemoryEvent(BaseModel):
    """A memory event. `event_id` is deterministic, so consumers can drop replays."""

    event_id: str
    kind: EventKind
    user_id: str
    thread_id: str
    memory_id: str
    rev: int = Field(ge=0, description="Per-thread revision after this change.")
    ts: EventTime
    summary: str
    category: str
    meta: dict[str, Any] = Field(default_factory=dict)
