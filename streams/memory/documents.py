"""Memory documents made from candidates: a new memory, and a memory merged with a repeat."""
from __future__ import annotations

import fnmatch
from typing import Any

import numpy as np

from streams.memory import ids
from streams.memory.model import Memory
from streams.memory.tables import candidate_key
from streams.memory.vector_index import decode_sized, encode_vector
from streams.write.episodic import time_bucket, user_zone
from topics.candidates import Candidate


def candidate_id(candidate: Candidate) -> str:
    """Deterministic id of a candidate, and of the memory it creates."""
    turn = candidate.turn
    return ids.memory_id(turn.user_id, turn.thread_id, turn.turn_id, candidate.fact_index)


def applied_key(candidate: Candidate) -> str:
    """Key under which the `applied` table remembers the candidate."""
    turn = candidate.turn
    return candidate_key(turn.user_id, turn.thread_id, turn.turn_id, candidate_id(candidate))


def keys_match(a: str, b: str) -> bool:
    """Entity keys name the same slot; `*` in either stands for one unknown part
    (`profile:*:luna:age` matches `profile:pet:luna:age`)."""
    return a == b or fnmatch.fnmatchcase(a, b) or fnmatch.fnmatchcase(b, a)


def same_text(a: str, b: str) -> bool:
    """The same summary but for case, spacing and a final period."""
    return _normal(a) == _normal(b)


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def new_memory(candidate: Candidate, memory_id: str, vector: np.ndarray) -> Memory:
    """The memory a candidate creates, with its provenance and, if episodic, its time bucket."""
    turn, fact = candidate.turn, candidate.fact
    buckets: dict[str, Any] = {}
    if fact.type == "episodic":
        date_iso, week, year = time_bucket(turn.ts, user_zone(turn))
        buckets = {"date_iso": date_iso, "week": week, "year": year}
    return Memory(
        **buckets,
        id=memory_id, user_id=turn.user_id, type=fact.type, category=fact.category,
        summary=fact.summary, tags=fact.tags, entities=fact.entities, entity_key=fact.entity_key,
        source=turn.source, importance=fact.importance, pinned=fact.pinned,
        valence=fact.valence, intensity=fact.intensity, event_start=fact.event_start,
        event_end=fact.event_end, created_at=turn.ts, updated_at=turn.ts,
        last_accessed=turn.ts, valid_from=turn.ts, source_turn_ids=list(candidate.refs),
        agent_id=turn.agent_id, run_id=turn.run_id, actor_id=turn.actor_id, role=turn.role.value,
        thread_id=turn.thread_id, embedding_b64=encode_vector(vector),
        context_b64=carried_context(candidate, vector.size),
    )


def carried_context(candidate: Candidate, dim: int) -> str | None:
    """The candidate's context vector (`streams.write.contextual`) if it is one of `dim`
    values; None otherwise (the memory is then searched by its summary alone)."""
    return candidate.context_b64 if decode_sized(candidate.context_b64, dim) is not None else None


def merged_memory(target: Memory, candidate: Candidate) -> Memory:
    """Seed 002 merge: union tags, max importance, extend provenance, refresh last_accessed."""
    turn, fact = candidate.turn, candidate.fact
    return target.model_copy(
        update={
            "tags": sorted(set(target.tags) | set(fact.tags)),
            "entities": sorted(set(target.entities) | set(fact.entities)),
            "importance": max(target.importance, fact.importance),
            "event_start": min((d for d in (target.event_start, fact.event_start) if d), default=None),
            "event_end": max((d for d in (target.event_end, fact.event_end) if d), default=None),
            "pinned": target.pinned or fact.pinned,
            "source_turn_ids": [*target.source_turn_ids,
                                *(r for r in candidate.refs if r not in target.source_turn_ids)],
            "last_accessed": max(target.last_accessed, turn.ts),
            "updated_at": max(target.updated_at, turn.ts),
            "last_verified_at": turn.ts,
            "version": target.version + 1,
        }
    )
