"""Forgetting (docs/architecture.md#write-path, §8; seeds 000 §6, 001 §7, 004 §7): six transitions, in this order.

What forgetting is for (docs/forgetting.md): the active tier stays small and relevant (search
noise, ranking), trivia and what users or the law ask to forget are gone for good (privacy),
and everything else moves to the archive, the cold tier, which a query still reaches
(`streams.read.cold_tier`). Nothing a user may ask about later is purged by age alone.

- purge: a soft-deleted memory whose `purge_at` has passed becomes a content-free tombstone
  (`state=purged`, kind `purged`); its audit history is replaced by a tombstone too. The document
  stays (without content) so that a replay of the turn that created it cannot bring it back.
- TTL soft-delete (trivia only): unused (`last_accessed`) for more than `TTL_DAYS`, importance
  at most `TTL_IMPORTANCE_MAX` (1: small talk, `streams.write.importance`), not pinned, not an
  original a consolidation keeps → `state=soft_deleted`, `purge_at = now + PURGE_AFTER_DAYS`
  (kind `soft_deleted`, reason `ttl`). Restorable until the purge (`restore` command).
- archive retention (a retention window, off unless `ARCHIVE_RETENTION_DAYS` is set): archived
  for longer, not pinned → soft-deleted (reason `archive_retention`), purged
  `PURGE_AFTER_DAYS` later. Seed 000 §6 retains archived memories 180 d; docs/decisions.md keeps the
  cold tier until a user or a policy says otherwise, so the window is the operator's choice.
- rewarm: an archived memory read since it was archived (a query hit counts as an access:
  `streams.memory.access`) returns to the active tier (kind `restored`, reason `accessed`);
  not the originals of a consolidated memory, which it answers for.
- decay archive: unused for more than `ARCHIVE_UNUSED_DAYS` and the decay weight
  (`streams.memory.decay`) under `ARCHIVE_WEIGHT_MIN`, not pinned → `state=archived` (kind
  `archived`, reason `decay`). Kept, searchable in the cold tier, restorable.
- memory cap: more than `MEMORY_CAP` active semantic memories → the excess, lowest decay weight
  then least recently used first, never pinned, is archived (reason `memory_cap`; seed 004's
  "drop oldest + lowest-confidence", into the cold tier rather than away).

Every transition is announced once: the next run finds the memory in its new state. At most
`LIFECYCLE_MAX_CHANGES` transitions per user per run; the rest wait for the next run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from collections.abc import Set as AbstractSet
from typing import Any

from streams.settings import LifecycleSettings
from streams.lifecycle.passes import ACTOR, LIFECYCLE_THREAD, thread_of
from streams.memory.decay import days_unused, decay_weight, weight_after
from streams.memory.model import Memory
from streams.memory.purge import scrub_memory
from streams.memory.state import MemoryState
from topics.events import EventKind, MemoryEvent

_CONTENT_CLEARED: dict[str, Any] = {
    "summary": "", "category": "", "tags": [], "entities": [], "entity_key": None, "related_ids": [],
    "relations": {}, "consolidated_from": [], "source_turn_ids": [], "valence": None,
    "intensity": None, "embedding_b64": None, "context_b64": None, "date_iso": None, "week": None, "year": None,
    "agent_id": None, "run_id": None, "actor_id": None, "superseded_by": None, "purge_at": None,
}


@dataclass(frozen=True)
class ForgetConfig:
    """What forgetting keeps and for how long; the defaults are the settings' (`of`)."""

    ttl_days: int
    ttl_importance_max: int
    purge_after_days: int
    archive_weight_min: float
    archive_unused_days: int
    archive_retention_days: int | None
    memory_cap: int
    max_changes: int

    @classmethod
    def of(cls, lifecycle: LifecycleSettings) -> ForgetConfig:
        return cls(
            ttl_days=lifecycle.ttl_days, ttl_importance_max=lifecycle.ttl_importance_max,
            purge_after_days=lifecycle.purge_after_days,
            archive_weight_min=lifecycle.archive_weight_min,
            archive_unused_days=lifecycle.archive_unused_days,
            archive_retention_days=lifecycle.archive_retention_days, memory_cap=lifecycle.memory_cap,
            max_changes=lifecycle.lifecycle_max_changes,
        )


class ForgettingPass:
    """The `forgetting` lifecycle pass (a `streams.lifecycle.passes.LifecyclePass`)."""

    name = "forgetting"

    def __init__(self, config: ForgetConfig | None = None) -> None:
        self.config = config or ForgetConfig.of(LifecycleSettings())

    async def __call__(self, state: MemoryState, user_id: str, now: datetime) -> list[MemoryEvent]:
        return forget(state, user_id, now, self.config)


def forget(state: MemoryState, user_id: str, now: datetime, config: ForgetConfig) -> list[MemoryEvent]:
    """Make the user's due transitions at `now` (module doc); return their events."""
    memories = sorted(state.index.user(user_id).stored_docs(), key=lambda m: m.id)
    due = due_transitions(memories, now, config)
    events: list[MemoryEvent] = []
    budget = config.max_changes

    changed: set[str] = set()

    def room(memory: Memory) -> bool:
        """Budget left, and the memory not changed yet in this run (one transition per run)."""
        if len(events) >= budget or memory.id in changed:
            return False
        changed.add(memory.id)
        return True

    for memory in due.purge:
        if room(memory):
            events.append(purge(state, memory, now))
    for memory in due.ttl:
        if memory.id not in due.kept and room(memory):
            events.append(soft_delete(state, memory, now, config, "ttl"))
    for memory in due.retention:
        if room(memory):
            events.append(soft_delete(state, memory, now, config, "archive_retention"))
    for memory in due.rewarm:
        if memory.id not in due.kept and room(memory):
            events.append(transition(state, memory, now, "restored", "accessed", {"state": "active"}))
    for memory in due.archive:
        if room(memory):
            events.append(archive(state, memory, now, "decay"))
    for memory in over_cap(state, user_id, now, config, changed):
        if room(memory):
            events.append(archive(state, memory, now, "memory_cap"))
    return events


@dataclass
class Due:
    """The memories each transition is due for at one time, in the order given (a memory may be
    due for several; a run makes the first that has room), and the ids of the originals of the
    consolidated memories not purged (`kept`), which TTL and rewarm leave alone."""

    purge: list[Memory] = field(default_factory=list)
    ttl: list[Memory] = field(default_factory=list)
    retention: list[Memory] = field(default_factory=list)
    rewarm: list[Memory] = field(default_factory=list)
    archive: list[Memory] = field(default_factory=list)
    kept: set[str] = field(default_factory=set)


def due_transitions(memories: list[Memory], now: datetime, config: ForgetConfig) -> Due:
    """The transitions of the module doc due at `now` for each of `memories`, read in one pass
    with each memory's days unused computed once (a run scans every memory of its user; a scan
    per transition, each memory's age computed again in each, was most of a run that found
    little due)."""
    due = Due()
    retention = (None if config.archive_retention_days is None
                 else timedelta(days=config.archive_retention_days))
    for memory in memories:
        memory_state = memory.state
        if memory.type == "consolidated" and memory_state != "purged":
            due.kept.update(memory.consolidated_from)
        if memory_state == "archived" and memory.superseded_by is None \
                and memory.last_accessed > memory.updated_at:
            due.rewarm.append(memory)  # pinned or not
        if memory.pinned or memory_state not in ("active", "archived", "soft_deleted"):
            continue
        if memory_state == "soft_deleted":
            if purge_time(memory, config) <= now:
                due.purge.append(memory)
            continue
        unused = days_unused(memory, now)
        if memory.importance <= config.ttl_importance_max and unused > config.ttl_days:
            due.ttl.append(memory)
        if memory_state == "archived":
            if retention is not None and now - memory.updated_at > retention:
                due.retention.append(memory)
        elif (unused > config.archive_unused_days
              and weight_after(memory.importance, unused) < config.archive_weight_min):
            due.archive.append(memory)
    return due


def purge_time(memory: Memory, config: ForgetConfig) -> datetime:
    """When a soft-deleted memory is purged: its `purge_at`, or, for one soft-deleted by a
    command (which sets none), `PURGE_AFTER_DAYS` after that change."""
    return memory.purge_at or memory.updated_at + timedelta(days=config.purge_after_days)


def over_cap(state: MemoryState, user_id: str, now: datetime, config: ForgetConfig,
             changed: AbstractSet[str] = frozenset()) -> list[Memory]:
    """The active semantic memories past the cap, in eviction order: lowest decay weight, then
    least recently used, then id (deterministic); pinned ones count but are never evicted.
    Memories in `changed` left the active ones in this run already."""
    active = [m for m in state.index.user(user_id).stored_docs()
              if m.state == "active" and m.type == "semantic" and m.id not in changed]
    excess = len(active) - config.memory_cap
    if excess <= 0:
        return []
    evictable = sorted((m for m in active if not m.pinned),
                       key=lambda m: (decay_weight(m, now), m.last_accessed, m.id))
    return evictable[:excess]


def archive(state: MemoryState, memory: Memory, now: datetime, reason: str) -> MemoryEvent:
    """Move `memory` to the cold tier, with its decay weight in the event."""
    return transition(state, memory, now, "archived", reason, {"state": "archived"},
                      weight=round(decay_weight(memory, now), 4))


def soft_delete(state: MemoryState, memory: Memory, now: datetime, config: ForgetConfig,
                reason: str) -> MemoryEvent:
    purge_at = now + timedelta(days=config.purge_after_days)
    return transition(state, memory, now, "soft_deleted", reason,
                      {"state": "soft_deleted", "purge_at": purge_at})


def transition(state: MemoryState, memory: Memory, now: datetime, kind: EventKind, reason: str,
               update: dict[str, Any], weight: float | None = None) -> MemoryEvent:
    """Store `memory` changed by `update` and announce it as `kind` (with `reason`)."""
    changed = memory.model_copy(update={**update, "version": memory.version + 1, "updated_at": now})
    state.store(changed)
    meta: dict[str, Any] = {"reason": reason}
    if weight is not None:
        meta["weight"] = weight
    if changed.purge_at is not None:
        meta["purge_at"] = changed.purge_at.isoformat()
    return state.announce(kind, changed, thread_of(memory), now, meta, old=memory, actor=ACTOR)


def purge(state: MemoryState, memory: Memory, now: datetime) -> MemoryEvent:
    """Replace the memory by a content-free tombstone (its vector leaves the document too), and
    clear what else the tables keep of it (`streams.memory.purge.scrub_memory`)."""
    history = state.history(memory.id)  # before the purge's tombstone replaces it
    tombstone = memory.model_copy(update={**_CONTENT_CLEARED, "state": "purged",
                                          "version": memory.version + 1, "updated_at": now})
    # Not `state.store`: that would copy the vector back into the document from the index.
    state.tables.memories[tombstone.id] = tombstone.model_dump(mode="json")
    state.index.add(tombstone)  # listed still, by a zero vector: the content's vector goes too
    event = state.announce("purged", tombstone, thread_of(memory), now, {"reason": "purge_at"},
                           actor=ACTOR)
    scrub_memory(state, memory, history, threads=(thread_of(memory), LIFECYCLE_THREAD))
    return event
