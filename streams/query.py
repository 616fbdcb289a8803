"""Answering a memory query from the in-worker index (SPEC §5 ranking)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from streams import ranking
from streams.memory import Memory
from streams.vector_index import UserIndex


@dataclass(frozen=True)
class QueryHit:
    memory: Memory
    similarity: float
    score: float

    def as_item(self) -> dict[str, Any]:
        """The JSON item of a query answer: the memory (no vector) with its scores."""
        item = self.memory.model_dump(mode="json", exclude={"embedding_b64"})
        item["score"] = round(self.score, 6)
        item["similarity"] = round(self.similarity, 6)
        return item


def related_bullets(index: UserIndex, memory: Memory, limit: int = 2) -> list[dict[str, Any]]:
    """The strongest `related_to` neighbours of a memory that are still active (seed 001 §2)."""
    out = []
    for other_id, strength in sorted(memory.relations.items(), key=lambda kv: -kv[1]):
        other = index.docs.get(other_id)
        if other is not None and other.is_visible:
            out.append({"id": other.id, "summary": other.summary, "strength": strength})
        if len(out) >= limit:
            break
    return out


def user_clock(index: UserIndex) -> datetime | None:
    """The user's "now": the latest event time among their memories (never the wall clock)."""
    times = [m.updated_at for m in index.docs.values()] + [m.last_accessed for m in index.docs.values()]
    return max(times) if times else None


def rank(
    index: UserIndex, query_vector: np.ndarray, *, top_k: int, candidates: int,
    weights: ranking.RankWeights, now: datetime | None = None,
) -> list[QueryHit]:
    """Top-k active memories by the ranking formula, over the best `candidates` by similarity."""
    pool = index.search(query_vector, max(candidates, top_k))
    if not pool:
        return []
    now = now or user_clock(index) or max(m.updated_at for m, _ in pool)
    hits = [QueryHit(m, sim, ranking.score(m, sim, now, weights, max(m.relations.values(), default=0.0)))
            for m, sim in pool]
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits[:top_k]
