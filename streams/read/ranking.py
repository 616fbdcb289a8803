"""The ranking formula of docs/architecture.md#read-path (seed 002 weights plus seed 001's related boost).

The recency term is the memory's decay (seed 000 §6, `streams.memory.decay`): 0.5 ** (days since
last used / the half-life of its importance, 30 to 365 days), so an important memory fades
slowly and a trivial one fast. Multiplying the importance term by the decay too (seed 000's
weight `importance · decay` as one term) counted age twice: on LoCoMo conv-26 it gave 0.500
recall_any@5, this form 0.547, a flat 90-day recency 0.527.

The weights are seed 002's but for importance (0.20 there) and recency (0.15): 0.10 and 0.05
(docs/decisions.md#ranking-weights). With the lifecycle on, importance and age already decide
what stays active (the archive takes the decayed, the TTL the small talk), so at the seed's
weights they counted twice, and a weakly matching important or recent memory pushed out the one
that answers: recall_any@10 on the six LoCoMo dev conversations +0.7 points and @5 +1.1, on both
cross-validation halves, @20 unchanged (docs/benchmarks.md#recall). Reads refresh recency,
so in a live chat what was just used still ranks up.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np

from streams.memory.decay import decay_factor, importance_norm
from streams.memory.model import Memory
from streams.settings import ReadSettings

__all__ = ["RankWeights", "importance_norm", "pool_relevance", "score", "weights_of"]

RelevanceNorm = Literal["raw", "pool"]


@dataclass(frozen=True)
class RankWeights:
    """The terms of a memory's score (`score`); made from the read settings (`weights_of`)."""

    similarity: float
    importance: float
    recency: float
    pinned: float
    related: float
    consolidated: float
    """Bonus of a `consolidated` memory: queries prefer it to the episodes it replaced."""
    insight: float
    """Penalty of an `insight`: surfaced with low weight (seed 001 §3)."""
    archived: float
    """Penalty of an archived memory (the cold tier, docs/decisions.md): it ranks below an active one
    that matches as well."""
    relevance_norm: RelevanceNorm
    """How the similarity term is scaled: `raw` is the relevance as retrieved, `pool` spreads
    it over [0, 1] across the candidate pool (`pool_relevance`)."""
    relevance_min_spread: float
    """The smallest relevance spread `pool` stretches to [0, 1] (see `pool_relevance`)."""
    diversity: float
    """Maximal marginal relevance penalty: a candidate's score minus this times its highest
    cosine to the items ranked above it (`streams.read.diversity`); 0 ranks by score alone."""
    said_again: float = 0.0
    """Penalty of a candidate all of whose source turns the items ranked above it come from
    (`streams.read.diversity.diversified_order`)."""


def pool_relevance(relevances: np.ndarray, min_spread: float) -> np.ndarray:
    """The candidates' relevances on [0, 1]: 1 for the best, 0 for one `spread` below it, where
    the spread is the pool's (best minus worst) but at least `min_spread`.

    Why: importance, recency and pinned each span [0, 1] over the memories, while the
    relevance of the candidates of one query spans far less (the best 24 of a LoCoMo user's
    ~600 memories lie 0.16-0.48 apart, median 0.31), so with raw relevance the 0.55 weight of
    the similarity term counted for less than the 0.20 of importance, and an important, recent
    but weakly matching memory outranked the one that answers the query (LoCoMo recall_any@5
    0.566 raw, 0.630 pool-scaled, both halves alike). Scaled, the weights mean what they say.
    `min_spread` keeps a pool of near-equal candidates (a small index) from having a tiny
    difference stretched into the whole similarity weight: its default, 0.3, is about the
    median spread of a pool of 24 (LoCoMo), so a small index's pool weighs the terms no more
    in favour of the similarity than a typical one; there a slightly less similar (by 0.05)
    pinned or consolidated memory still outranks a plain one, an insight stays below a fact,
    and LoCoMo recall is within 0.004 of no floor (0.1-0.3).
    """
    values = np.asarray(relevances, dtype=np.float64)
    if values.size == 0:
        return values
    best = float(values.max())
    spread = max(best - float(values.min()), min_spread)
    return 1.0 - (best - values) / spread


def type_adjustment(memory: Memory, weights: RankWeights) -> float:
    """What the memory's type and tier add to its score (consolidated +, insight -,
    archived -, others 0)."""
    adjustment = -weights.archived if memory.is_archived else 0.0
    if memory.type == "consolidated":
        return adjustment + weights.consolidated
    if memory.type == "insight":
        return adjustment - weights.insight
    return adjustment


def score(
    memory: Memory, similarity: float, now: datetime, weights: RankWeights, related_strength: float = 0.0
) -> float:
    """Final ranking score of one memory for one query."""
    return (
        weights.similarity * similarity
        + weights.importance * importance_norm(memory.importance)
        + weights.recency * decay_factor(memory, now)
        + weights.pinned * (1.0 if memory.pinned else 0.0)
        + weights.related * related_strength
        + type_adjustment(memory, weights)
    )


def weights_of(read: ReadSettings) -> RankWeights:
    """The ranking weights of the read settings (RANK_W_*)."""
    return RankWeights(
        similarity=read.rank_w_similarity, importance=read.rank_w_importance,
        recency=read.rank_w_recency, pinned=read.rank_w_pinned, related=read.rank_w_related,
        consolidated=read.rank_w_consolidated, insight=read.rank_w_insight,
        archived=read.rank_w_archived, relevance_norm=read.rank_relevance_norm,
        relevance_min_spread=read.rank_relevance_min_spread, diversity=read.rank_diversity,
        said_again=read.rank_said_again,
    )
