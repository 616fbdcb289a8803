"""The memory state of the users one worker owns, and how a candidate changes it.

Pure logic over `MutableMapping`s: in the worker these are Faust tables (every write is
changelogged and lands on the partition of the event being processed); offline and in tests
they are plain dicts. Sending the resulting events is the caller's job.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from streams import dedup, ids
from streams.embedder import EmbedderProfile
from streams.memory import Memory
from streams.vector_index import VectorIndex, encode_vector
from topics.candidates import Candidate
from topics.events import MemoryEvent

Table = MutableMapping[Any, Any]


@dataclass(frozen=True)
class DedupConfig:
    profile: EmbedderProfile
    neighbours_k: int = 10
    episodic_merge_window: timedelta = timedelta(hours=72)
    use_heuristics: bool = True


@dataclass
class Applied:
    """What a candidate did: its outcome, the memory it touched, the events to send."""

    outcome: str  # created | updated | duplicate
    memory_id: str
    events: list[MemoryEvent] = field(default_factory=list)
    similarity: float | None = None
    replayed: bool = False


def candidate_id(candidate: Candidate) -> str:
    """Deterministic id of a candidate, and of the memory it creates."""
    return ids.memory_id(candidate.turn.user_id, candidate.turn.ref, candidate.fact_index)


def new_memory(candidate: Candidate, memory_id: str, vector: np.ndarray) -> Memory:
    turn, fact = candidate.turn, candidate.fact
    return Memory(
        id=memory_id, user_id=turn.user_id, type=fact.type, category=fact.category,
        summary=fact.summary, tags=fact.tags, entities=fact.entities, entity_key=fact.entity_key,
        source=turn.source, importance=fact.importance, created_at=turn.ts, updated_at=turn.ts,
        last_accessed=turn.ts, valid_from=turn.ts, source_turn_ids=[turn.ref],
        agent_id=turn.agent_id, run_id=turn.run_id, actor_id=turn.actor_id, role=turn.role.value,
        thread_id=turn.thread_id, embedding_b64=encode_vector(vector),
    )


def merged_memory(target: Memory, candidate: Candidate) -> Memory:
    """Seed 002 merge: union tags, max importance, extend provenance, refresh last_accessed."""
    turn, fact = candidate.turn, candidate.fact
    return target.model_copy(
        update={
            "tags": sorted(set(target.tags) | set(fact.tags)),
            "entities": sorted(set(target.entities) | set(fact.entities)),
            "importance": max(target.importance, fact.importance),
            "source_turn_ids": [*target.source_turn_ids, turn.ref],
            "last_accessed": max(target.last_accessed, turn.ts),
            "updated_at": max(target.updated_at, turn.ts),
            "last_verified_at": turn.ts,
            "version": target.version + 1,
        }
    )


class MemoryState:
    """Memories, applied candidates, users and per-thread revisions of the owned partitions."""

    def __init__(self, *, memories: Table, applied: Table, users: Table, thread_revs: Table,
                 index: VectorIndex, config: DedupConfig) -> None:
        self.memories = memories
        self.applied = applied
        self.users = users
        self.thread_revs = thread_revs
        self.index = index
        self.config = config

    # --- reads -------------------------------------------------------------------------
    def is_applied(self, candidate: Candidate) -> bool:
        return candidate_id(candidate) in self.applied

    def memory(self, memory_id: str) -> Memory | None:
        raw = self.memories.get(memory_id)
        return Memory.model_validate(raw) if raw is not None else None

    # --- writes ------------------------------------------------------------------------
    def _store(self, memory: Memory) -> None:
        self.memories[memory.id] = memory.model_dump(mode="json")

    def next_rev(self, user_id: str, thread_id: str) -> int:
        """Increment and return the thread's revision (one writer per partition: atomic)."""
        key = f"{user_id}|{thread_id}"
        rev = (self.thread_revs.get(key) or 0) + 1
        self.thread_revs[key] = rev
        return rev

    def _touch_user(self, user_id: str, clock: datetime, created: bool) -> None:
        info = dict(self.users.get(user_id) or {"memories": 0, "clock": clock.isoformat()})
        info["memories"] += 1 if created else 0
        info["clock"] = max(datetime.fromisoformat(info["clock"]), clock).isoformat()
        self.users[user_id] = info

    def _event(self, kind: str, memory: Memory, candidate: Candidate, meta: dict) -> MemoryEvent:
        turn = candidate.turn
        return MemoryEvent(
            event_id=ids.event_id(memory.id, kind, memory.version), kind=kind,  # type: ignore[arg-type]
            user_id=memory.user_id, thread_id=turn.thread_id, memory_id=memory.id,
            rev=self.next_rev(turn.user_id, turn.thread_id), ts=turn.ts, summary=memory.summary,
            category=memory.category, meta={"type": memory.type, "source_turn_id": turn.ref, **meta},
        )

    def apply(self, candidate: Candidate, vector: np.ndarray) -> Applied:
        """Create or update a memory from `candidate` (embedding `vector`).

        A candidate seen before changes nothing and returns the events it produced then, so a
        replay re-sends identical events (same event_id).
        """
        turn, fact = candidate.turn, candidate.fact
        cid = candidate_id(candidate)
        prior = self.applied.get(cid)
        if prior is not None:
            events = [MemoryEvent.model_validate(e) for e in prior.get("events", [])]
            return Applied(prior["outcome"], prior["memory_id"], events, replayed=True)

        user_index = self.index.user(turn.user_id)
        neighbours = user_index.search(
            vector, self.config.neighbours_k, accept=lambda m: m.is_visible and m.type == fact.type
        )
        decision = dedup.decide(
            memory_type=fact.type, summary=fact.summary, entities=fact.entities,
            event_time=turn.ts, neighbours=neighbours, profile=self.config.profile,
            merge_window=self.config.episodic_merge_window, use_heuristics=self.config.use_heuristics,
        )
        meta = {"similarity": round(decision.score, 4), "reason": decision.reason}
        events: list[MemoryEvent] = []
        if decision.action is dedup.Action.update and decision.target is not None:
            target = decision.target
            if turn.ref in target.source_turn_ids:
                outcome, memory = "duplicate", target
            else:
                outcome, memory = "updated", merged_memory(target, candidate)
                self._store(memory)
                user_index.update_doc(memory)
                events.append(self._event("updated", memory, candidate, meta))
        else:
            existing = self.memory(cid)
            if existing is not None:  # written before a crash, `applied` not yet: keep it
                outcome, memory = "duplicate", existing
            else:
                outcome, memory = "created", new_memory(candidate, cid, vector)
                self._store(memory)
                user_index.upsert(memory, vector)
                events.append(self._event("created", memory, candidate, meta))
        self._touch_user(turn.user_id, turn.ts, created=outcome == "created")
        self.applied[cid] = {
            "outcome": outcome, "memory_id": memory.id,
            "events": [e.model_dump(mode="json") for e in events],
        }
        best = neighbours[0][1] if neighbours else None
        return Applied(outcome, memory.id, events, similarity=best)
