"""Settings of one concern: proactivity (docs/configuration.md#proactivity)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streams.settings.section import Section


class ProactivitySettings(Section):
    """Proactivity."""

    title: ClassVar[str] = "Proactivity"
    about: ClassVar[str] = (
        'Candidates for reaching out, on `memory.proactivity` '
        '([architecture.md](architecture.md#proactivity)).'
    )

    proactivity_enabled: bool = Field(True, description="Send proactivity candidates to memory.proactivity.")
    proactivity_min_weight: float = Field(
        0.55, ge=0, le=1, description="Least proactivity_weight of a memory worth reaching out about.")
    proactivity_min_trust: float = Field(
        0.6, ge=0, le=1, description="Least trust_score of a memory worth reaching out about.")
    proactivity_max_per_day: int = Field(
        2, ge=0, description="Proactivity candidates per user per event-time day, at most.")
    proactivity_min_interval_hours: float = Field(
        6.0, gt=0, description="Least event time between two candidates of a user; doubled per "
        "candidate reported ignored in a row (proactivity_feedback), up to 30 days.")
