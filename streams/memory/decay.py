"""The decay weight of a memory (seed 000 §6): `importance · 0.5^(days unused / half-life)`.

Importance is the docs/decisions.md normalised score `(importance - 1) / 4`; the half-life grows with it
(≥ 0.85 → 365 d, 0.5–0.85 → 180 d, 0.2–0.5 → 90 d, below → 30 d), so an important memory fades
slowly and a trivial one fast. The ranking's recency term is the decay factor
(`streams.read.ranking`), and the lifecycle archives a memory whose weight fell below
`ARCHIVE_WEIGHT_MIN` (seed 000: 0.05).
It is a separate control from the TTL soft-delete (docs/decisions.md), which looks at `last_accessed` and
importance only.
"""
from __future__ import annotations

from datetime import datetime

from streams.memory.model import Memory

_HALF_LIVES = ((0.85, 365.0), (0.5, 180.0), (0.2, 90.0))
_SHORTEST_HALF_LIFE = 30.0


def importance_norm(importance: int) -> float:
    """docs/decisions.md: importance is an int 1-5; normalised as (importance - 1) / 4."""
    return (min(max(importance, 1), 5) - 1) / 4


def half_life_days(importance: int) -> float:
    """Seed 000 §6's half-life of a memory of this importance."""
    score = importance_norm(importance)
    return next((days for floor, days in _HALF_LIVES if score >= floor), _SHORTEST_HALF_LIFE)


def days_unused(memory: Memory, now: datetime) -> float:
    """Days since the memory was last read or written (never negative)."""
    return max((now - memory.last_accessed).total_seconds() / 86400.0, 0.0)


def decay_factor(memory: Memory, now: datetime) -> float:
    """0.5 ** (days unused / half-life of its importance): 1.0 when just used."""
    return factor_after(memory.importance, days_unused(memory, now))


def decay_weight(memory: Memory, now: datetime) -> float:
    """Seed 000 §6's `current_weight`: normalised importance times its decay factor."""
    return weight_after(memory.importance, days_unused(memory, now))


def factor_after(importance: int, unused_days: float) -> float:
    """The decay factor of a memory of `importance` unused for `unused_days` (`decay_factor`)."""
    return float(0.5 ** (unused_days / half_life_days(importance)))


def weight_after(importance: int, unused_days: float) -> float:
    """The decay weight of a memory of `importance` unused for `unused_days` (`decay_weight`;
    for a caller that has the days unused already, as forgetting's scan does)."""
    return importance_norm(importance) * factor_after(importance, unused_days)
