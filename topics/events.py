"""`memory.events`: every visible change of a memory (docs/architecture.md#topics).

A record holds one user's events of one stage batch, in order, as a JSON array of
`MemoryEvent`s (at most `MAX_EVENTS_PER_RECORD`; `events_record`): one record per user per batch
rather than one per event, deflated when that is shorter (`topics.deflated`). A
record written before holds the array in clear, or one `MemoryEvent` object; `events_of` reads
all three.

On the wire the content of an event — `summary` and `meta` — travels sealed for its user
(`sealed`, see `topics/sealed.py`); the envelope (ids, kind, revision, time, category) stays in
clear. memstream's own consumers open it; a consumer holding the master key can too
(`streams/tools/unseal.py`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from topics.deflated import deflated, inflated
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


MAX_EVENTS_PER_RECORD = 64
"""The most events one `memory.events` record holds (a user's events of a batch go in as few
records as this allows): a record stays well under Kafka's default 1 MB message limit."""

_EVENT_LIST = TypeAdapter(list[MemoryEvent])


def events_record(events: Sequence[bytes]) -> bytes:
    """One record's value: the JSON array of `events` (each a `MemoryEvent`'s JSON), deflated
    when that is shorter (`topics.deflated`; a batch's events: about half the bytes)."""
    return deflated(b"[" + b",".join(events) + b"]")


def events_of(value: bytes | str | list[Any] | dict[str, Any] | None) -> list[MemoryEvent]:
    """The events of one `memory.events` record, raw or JSON-decoded: a JSON array of
    `MemoryEvent`s, deflated (`events_record`) or not, or one `MemoryEvent` object (a record
    written before, or by another producer). Raises pydantic's `ValidationError` when it is
    none of them, `DeflatedRecordError` when it does not inflate."""
    if isinstance(value, list):
        return _EVENT_LIST.validate_python(value)
    if isinstance(value, dict):
        return [MemoryEvent.model_validate(value)]
    raw = inflated(value) if isinstance(value, bytes) else value or b""
    if raw.lstrip()[:1] in (b"[", "["):
        return _EVENT_LIST.validate_json(raw)
    return [MemoryEvent.model_validate_json(raw)]
