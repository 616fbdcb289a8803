"""The ranking formula of SPEC §5 (seed 002 weights plus seed 001's related boost).

The recency term is the memory's decay (seed 000 §6, `streams.memory.decay`): 0.5 ** (days since
last used / the half-life of its importance, 30 to 365 days), so an important memory fades
slowly and a trivial one fast. Multiplying the importance term by the decay too (seed 000's
weight `importance · decay` as one term) counted age twice: on LoCoMo conv-26 it gave 0.500
recall_any@5, this form 0.547, a flat 90-day recency 0.527.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from streams.memory.decay import decay_factor, importance_norm
from streams.memory.model import Memory

__all__ = ["RankWeights", "importance_norm", "score", "weights_from_settings"]


@dataclass(frozen=True)
class RankWeights:
    similarity: float = 0.55
    importance: float = 0.20
    recency: float = 0.15
    pinned: float = 0.10
    related: float = 0.05


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
    )


def weights_from_settings(settings: Any) -> RankWeights:
    """The ranking weights of the settings (RANK_W_*)."""
    return RankWeights(
        similarity=settings.rank_w_similarity, importance=settings.rank_w_importance,
        recency=settings.rank_w_recency, pinned=settings.rank_w_pinned,
        related=settings.rank_w_related,
    )
