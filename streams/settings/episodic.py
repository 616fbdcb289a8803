"""Settings of one concern: episodic capture (docs/configuration.md#episodic)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streams.settings.section import Section


class EpisodicSettings(Section):
    """Episodic capture."""

    title: ClassVar[str] = "Episodic capture"
    about: ClassVar[str] = (
        "When a thread's recent turns become an episode "
        '([architecture.md](architecture.md#episodes)).'
    )

    episodic_cooldown_turns: int = Field(3, description="Turns between episodic captures at least.")
    episodic_cooldown_minutes: int = Field(10, description="Minutes between episodic captures at least.")
    episodic_max_per_day: int = Field(5, description="Episodic memories per user and day at most.")
    episodic_window_n: int = Field(10, description="Messages summarised into an episode.")
