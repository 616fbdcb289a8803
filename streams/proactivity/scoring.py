"""A memory's proactivity scores and tone (seed 000 §3, §11).

`proactivity_weight = importance_norm × valence_intensity_norm`, where
`importance_norm = (importance - 1) / 4` (SPEC §8) and `valence_intensity_norm = intensity ×
(0.8 if the valence is negative else 1.0)` (seed 000 §3): an important, strongly felt memory
is worth raising; a negative one a little less eagerly. A memory without a valence or an
intensity (extraction did not set them) counts as neutral with intensity 0.5.
"""
from __future__ import annotations

from typing import Literal

from streams.memory.model import Memory

Valence = Literal["positive", "negative", "neutral"]
NEUTRAL_INTENSITY = 0.5
_DEAD_ZONE = 0.05  # a numeric valence this close to 0 is neutral


def valence_of(memory: Memory) -> Valence:
    """The memory's valence as a label: stored as a label, or as a signed number."""
    raw = (memory.valence or "").strip().lower()
    if raw in ("positive", "negative", "neutral"):
        return raw  # type: ignore[return-value]
    try:
        value = float(raw)
    except ValueError:
        return "neutral"
    if value > _DEAD_ZONE:
        return "positive"
    return "negative" if value < -_DEAD_ZONE else "neutral"


def intensity_of(memory: Memory) -> float:
    """The memory's intensity in [0, 1] (neutral 0.5 when unset)."""
    if memory.intensity is None:
        return NEUTRAL_INTENSITY
    return min(1.0, max(0.0, float(memory.intensity)))


def proactivity_weight(memory: Memory) -> float:
    """How much the memory is worth raising unprompted, in [0, 1]."""
    importance_norm = (memory.importance - 1) / 4
    negative = valence_of(memory) == "negative"
    return round(importance_norm * intensity_of(memory) * (0.8 if negative else 1.0), 4)


def tone_of(memory: Memory) -> Literal["friendly", "soft_check_in", "neutral"]:
    """Seed 000 §11: positive → friendly; negative → a soft check-in (the user engaged just
    now: the memory comes from their turn); otherwise neutral."""
    return {"positive": "friendly", "negative": "soft_check_in"}.get(valence_of(memory), "neutral")  # type: ignore[return-value]
