"""The ranking formula of SPEC §5 (seed 002 weights plus seed 001's related boost)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from streams.memory.model import Memory


@dataclass(frozen=True)
class RankWeights:
    similarity: float = 0.55
    importance: float = 0.20
    recency: float = 0.15
    pinned: float = 0.10
    related: float = 0.05
    half_life_days: float = 90.0
    consolidated: float = 0.05
    """Bonus of a `consolidated` memory: queries prefer it to the episodes it replaced."""
    insight: float = 0.10
    """Penalty of an `insight`: surfaced with low weight (seed 001 §3)."""


def type_adjustment(memory: Memory, weights: RankWeights) -> float:
    """What the memory's type adds to its score (consolidated +, insight -, others 0)."""
    if memory.type == "consolidated":
        return weights.consolidated
    if memory.type == "insight":
        return -weights.insight
    return 0.0


def importance_norm(importance: int) -> float:
    """SPEC §8: importance is an int 1-5; normalised as (importance - 1) / 4."""
    return (min(max(importance, 1), 5) - 1) / 4


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
        + weights.importance * importance_norm(memory.importance)
        + weights.recency * recency_decay(memory.last_accessed, now, weights.half_life_days)
        + weights.pinned * (1.0 if memory.pinned else 0.0)
        + weights.related * related_strength
        + type_adjustment(memory, weights)
    )


def weights_from_settings(settings: Any) -> RankWeights:
    """The ranking weights of the settings (RANK_W_*, RECENCY_HALF_LIFE_DAYS)."""
    return RankWeights(
        similarity=settings.rank_w_similarity, importance=settings.rank_w_importance,
        recency=settings.rank_w_recency, pinned=settings.rank_w_pinned,
        related=settings.rank_w_related, half_life_days=settings.recency_half_life_days,
        consolidated=settings.rank_w_consolidated, insight=settings.rank_w_insight,
    )
