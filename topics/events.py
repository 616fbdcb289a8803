"""`memory.events`: every visible change of a memory (docs/architecture.md#topics).

On the wire the content of an event — `summary` and `meta` — travels sealed for its user
(`sealed`, see `topics/sealed.py`); the envelope (ids, kind, revision, time, category) stays in
clear. memstream's own consumers open it; a consumer holding the master key can too
(`streams/tools/unseal.py`).
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from topics.sealed import Sealed
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
    "archived",
    "consolidated",
    "promoted",
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
    sealed: Sealed | None = Field(None, description="summary and meta, sealed for the user.")
