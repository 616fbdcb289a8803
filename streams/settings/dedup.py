"""Settings of one concern: dedup, supersede and linking (docs/configuration.md#dedup)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streams.settings.section import Section


class DedupSettings(Section):
    """Dedup, supersede and linking."""

    title: ClassVar[str] = "Dedup, supersede and linking"
    about: ClassVar[str] = (
        'How the dedup stage decides between a new memory, an update and a supersede, and which '
        'neighbours it links ([architecture.md](architecture.md#dedup)). The bands default to the '
        "embedder's profile; set one only to override it."
    )

    semantic_auto_update: float | None = Field(None, description="Override of the profile's auto band.")
    semantic_check_low: float | None = Field(None, description="Override of the profile's check band.")
    episodic_auto_update: float | None = Field(None, description="Override (episodic auto band).")
    episodic_check_low: float | None = Field(None, description="Override (episodic check band).")
    episodic_merge_window_hours: int = Field(72, description="Episodic merges only within this window.")
    memory_neighbors_k: int = Field(10, description="Neighbours searched during dedup.")
    memory_enable_entity_heuristics: bool = Field(True, description="Same-fact check without an LLM.")
    memory_write_rate_limit_per_hour: int = Field(
        20, ge=0, description="New semantic memories per user per event-time hour (seed 002); past it a new fact is still "
        "stored but down-ranked (one importance level lower, tag over_write_budget); corrections and updates are "
        "never limited. 0: no limit.",
    )
    link_min: float = Field(0.6, description="Neighbours at or above this score become related_to edges.")
    dedup_batch_size: int = Field(64, ge=1, description="`memory.candidates` records dedup takes "
                                  "(and embeds) at once; a record holds one user's facts of an "
                                  "ingest batch.")
    dedup_batch_within_ms: int = Field(20, ge=1, description="Longest wait to fill a dedup batch.")
