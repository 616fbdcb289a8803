"""Settings of one concern: write path: trigger, extraction, policy (docs/configuration.md#write)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streams.settings.section import Section


class WriteSettings(Section):
    """Write path: trigger, extraction, policy."""

    title: ClassVar[str] = "Write path: trigger, extraction, policy"
    about: ClassVar[str] = (
        'What the ingest stage turns a turn into ([architecture.md](architecture.md#write-path)).'
    )

    memory_enabled: bool = Field(True, description="Master switch: no memories are written when false.")
    semantic_enabled: bool = Field(True, description="Write semantic memories.")
    episodic_enabled: bool = Field(True, description="Write episodic memories.")
    buffer_turns: int = Field(8, ge=1, description="Per-thread buffer of recent turns.")
    trigger_confidence_min: float = Field(0.6, description="Confidence at which a candidate is emitted.")
    trigger_budget_ms: int = Field(250, description="Time budget of an LLM trigger call.")
    max_facts_per_turn: int = Field(3, ge=1, le=5, description="Facts extracted per turn at most.")
    summary_max_chars: int = Field(280, description="Longest memory summary.")
    sensitive_categories: str = Field(
        "health,religion,politics,address,sexuality,union,biometric,finance",
        description="Sensitive data kinds not stored unless the user explicitly asks (seed 004; "
        "`streams/language/sensitive.py`: health, religion, politics, address, sexuality, union, "
        "biometric, finance), and never in an episode. Secrets are refused whatever this says.",
    )
    ingest_batch_size: int = Field(
        128, ge=1, description="Turns ingest takes at once when they wait (their candidates embedded "
        "in one call, their records and table writes made once per user). Only a backlog fills a "
        "batch: a lone turn waits `INGEST_BATCH_WITHIN_MS` at most.")
    ingest_batch_within_ms: int = Field(
        5, ge=1, description="Longest wait to fill an ingest batch (added to a lone turn's latency).")
