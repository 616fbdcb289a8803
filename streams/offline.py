"""The worker's stages run in process, without Kafka: for fast quality iteration and tests.

Same fact pipeline, same `MemoryState`, same ranking as the worker; only the transport is
missing. `memstream bench locomo --offline` reports recall from it in seconds.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Iterable

from streams import ranking
from streams.embedder import Embedder
from streams.facts import FactPipeline
from streams.memory_state import Applied, DedupConfig, MemoryState
from streams.query import QueryHit, rank
from streams.settings import Settings
from streams.vector_index import VectorIndex
from topics.candidates import Candidate
from topics.turns import Turn


def rank_weights(settings: Settings) -> ranking.RankWeights:
    return ranking.RankWeights(
        similarity=settings.rank_w_similarity, importance=settings.rank_w_importance,
        recency=settings.rank_w_recency, pinned=settings.rank_w_pinned,
        related=settings.rank_w_related, half_life_days=settings.recency_half_life_days,
    )


class OfflinePipeline:
    """Turns in, memories in dicts, queries answered — all in this process."""

    def __init__(self, settings: Settings, embedder: Embedder) -> None:
        self.settings = settings
        self.embedder = embedder
        self.facts = FactPipeline(settings)
        self.state = MemoryState(
            memories={}, applied={}, users={}, thread_revs={},
            index=VectorIndex(embedder.profile.dim),
            config=DedupConfig(
                profile=embedder.profile, neighbours_k=settings.memory_neighbors_k,
                link_min=settings.link_min,
                episodic_merge_window=timedelta(hours=settings.episodic_merge_window_hours),
                use_heuristics=settings.memory_enable_entity_heuristics,
            ),
        )
        self.weights = rank_weights(settings)

    def ingest(self, turns: Iterable[Turn], batch: int = 64) -> list[Applied]:
        """Run turns through extraction and dedup, embedding in batches like the worker."""
        candidates: list[Candidate] = []
        for turn in turns:
            if not self.settings.memory_enabled:
                continue
            result = self.facts.facts(turn)
            candidates.extend(
                Candidate(turn=turn, fact=fact, fact_index=i, fact_count=len(result.facts),
                          confidence=result.confidence)
                for i, fact in enumerate(result.facts)
            )
        applied: list[Applied] = []
        for start in range(0, len(candidates), batch):
            chunk = candidates[start:start + batch]
            vectors = self.embedder.embed([c.fact.summary for c in chunk])
            applied.extend(self.state.apply(c, v) for c, v in zip(chunk, vectors))
        return applied

    def query(self, user_id: str, text: str, top_k: int) -> list[QueryHit]:
        vector = self.embedder.embed([text])[0]
        return rank(self.state.index.user(user_id), vector, top_k=top_k,
                    candidates=self.settings.memory_context_topk, weights=self.weights)
