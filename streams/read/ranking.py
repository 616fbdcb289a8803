"""The ranking formula of SPEC §5 (seed 002 weights plus seed 001's related boost).

The importance term is the memory's decay weight (seed 000 §6, `streams.memory.decay`): its
normalised importance fading with the half-life of that importance since it was last used, so
an important memory nobody has needed for a year no longer outranks a fresh one on importance.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from streams.memory.decay import decay_weight, importance_norm
from streams.memory.model import Memory

__all__ = ["RankWeights", "importance_norm", "recency_decay", "score", "weights_from_settings"]


@dataclass(frozen=True)
class RankWeights:
    similarity: float = 0.55
    importance: float = 0.20
    recency: float = 0.15
    pinned: float = 0.10
    related: float = 0.05
    half_life_days: float = 90.0


def recency_decay(last_accessed: datetime, now: datetime, half_life_days: float) -> float:
    """0.5 ** (days since last access / half-life); 1.0 for anything not in the past."""
    days = max((now - last_accessed).total_seconds() / 86400.0, 0.0)
    return 0.5 ** (days / half_life_days)


def score(
    memory: Memory, similarity: float, now: datetime, weights: RankWeights, related_strength: float = 0.0
) -> float:
    """Final ranking score of one memory for one query."""
    return (
        weights.similarity * similarity
        + weights.importance * decay_weight(memory, now)
        + weights.recency * recency_decay(memory.last_accessed, now, weights.half_life_days)
        + weights.pinned * (1.0 if memory.pinned else 0.0)
        + weights.related * related_strength
    )


def weights_from_settings(settings: Any) -> RankWeights:
    """The ranking weights of the settings (RANK_W_*, RECENCY_HALF_LIFE_DAYS)."""
    return RankWeights(
        similarity=settings.rank_w_similarity, importance=settings.rank_w_importance,
        recency=settings.rank_w_recency, pinned=settings.rank_w_pinned,
        related=settings.rank_w_related, half_life_days=settings.recency_half_life_days,
    )
