"""`memory.events`: every visible change of a memory (docs/architecture.md#topics).

`MemoryEvent` is the event; `topics.events_wire` puts it on the topic (one event a record,
keyed by user, JSON) and reads it back, and `topics/schemas/memory-event.schema.json` is its
published JSON Schema (`topics.event_schema`).

On the wire the content of an event — `summary` and `meta` — travels sealed for its user
(`sealed`, see `topics/sealed.py`); the envelope (ids, kind, revision, time, category) stays in
clear. memstream's own consumers open it; a consumer holding the master key can too
(`streams/tools/unseal.py`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class EventKindSpec:
    """What each consumer of `memory.events` makes of one kind of event. A new kind is added to
    `EventKind` and given its row in `EVENT_KINDS`, here and nowhere else; a kind without a row
    fails `tests/unit/test_event_kinds.py` (no consumer falls back to a default)."""

    audit_verb: str
    """Its audit entry's verb (docs/architecture.md#memory-document), unless the event's reason
    names another (`streams/memory/audit.py`, `REASON_VERBS`)."""
    delta_sign: str
    """Its bullet's sign in the delta header (`streams/read/delta.py`)."""
    sink_op: str
    """Seed 001 §14 `op` of its events-index document (`sinks/opensearch.py`)."""
    write_path: bool
    """Whether it is made on the hot write path: seed 001 §14 `node` "hotpath" rather than
    "worker" (`sinks/opensearch.py`)."""
    removes_memory: bool = False
    """Whether the memory is gone from the vector stores after it: a delete rather than an
    upsert of the current document (`sinks/routing.py`)."""


EVENT_KINDS: Mapping[EventKind, EventKindSpec] = {
    "candidate": EventKindSpec("CANDIDATE", "candidate", "classify", write_path=True),
    "created": EventKindSpec("ADD", "+created", "create", write_path=True),
    "updated": EventKindSpec("UPDATE", "↑updated", "update", write_path=True),
    "merged": EventKindSpec("MERGE", "↔merged", "merge", write_path=True),
    "superseded": EventKindSpec("SUPERSEDE", "↻superseded", "supersede", write_path=True),
    "linked": EventKindSpec("LINK", "~linked", "link", write_path=True),
    "soft_deleted": EventKindSpec("SOFT_DELETE", "-deleted", "delete", write_path=False),
    "restored": EventKindSpec("RESTORE", "↺restored", "restore", write_path=False),
    "deleted": EventKindSpec("DELETE", "-deleted", "delete", write_path=False, removes_memory=True),
    "purged": EventKindSpec("PURGE", "×purged", "purge", write_path=False, removes_memory=True),
    "archived": EventKindSpec("ARCHIVE", "↓archived", "archived", write_path=False),
    "consolidated": EventKindSpec("CONSOLIDATED", "⊕consolidated", "consolidated", write_path=False),
    "promoted": EventKindSpec("PROMOTED", "⇑promoted", "promoted", write_path=False),
    "error": EventKindSpec("ERROR", "error", "error", write_path=False),
}
"""Every `EventKind`'s row (`EventKindSpec`)."""


class MemoryEvent(BaseModel):
    """A memory event. `event_id` is deterministic, so consumers can drop replays."""

    event_id: str = Field(description="Deterministic (the memory and its revision): the same "
                          "change replayed has the same id, so a consumer drops repeats by it.")
    kind: EventKind = Field(description="What happened to the memory.")
    user_id: str = Field(description="The user whose memory it is; also the record's key.")
    thread_id: str = Field(description="The thread whose revision `rev` is.")
    memory_id: str
    rev: int = Field(ge=0, description="Per-thread revision after this change.")
    ts: EventTime = Field(description="Event time: the time of the turn or command that made "
                          "the change (ISO 8601 with zone), never the worker's clock.")
    summary: str = Field(description="The memory's summary. Sealed: \"\" on the topic whenever "
                         "`sealed` is set; it is inside `sealed`.")
    category: str
    meta: dict[str, Any] = Field(default_factory=dict, description="Details of the change (the "
                                 "memory's type, reason, scores, related ids). Sealed: {} on the "
                                 "topic whenever `sealed` is set; it is inside `sealed`.")
    sealed: Sealed | None = Field(None, description="`summary` and `meta`, sealed for the user "
                                  "(AES-GCM with the user's data key; a purge deletes the key "
                                  "and every copy stops opening). Opened by memstream's own "
                                  "consumers, or with the master key (`memstream watch`, "
                                  "`streams.tools.unseal`); "
                                  "null for an event with no content (e.g. `purged`).")
