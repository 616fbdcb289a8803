"""Settings of one concern: input limits and dead letters (docs/configuration.md#input)."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from streams.settings.section import Section


class InputSettings(Section):
    """Input limits and dead letters."""

    title: ClassVar[str] = "Input limits and dead letters"
    about: ClassVar[str] = (
        'What a record may be before it goes to its dead-letter topic '
        '([architecture.md](architecture.md#bad-input)).'
    )

    max_turn_chars: int = Field(8000, ge=1, description="Longer turn texts go to the DLQ.")
    max_record_bytes: int = Field(262144, ge=1, description="Larger raw records go to the DLQ.")
    dlq_max_raw_bytes: int = Field(
        262144, ge=1024, le=700_000,
        description="Bytes of a record a dead letter keeps at most; a larger record keeps its first "
        "bytes, marked raw_truncated, with its size and HMAC (a dead letter must fit the "
        "producer's 1 MB request limit, and base64 adds a third).",
    )
    max_future_skew_seconds: int = Field(
        3600, ge=0,
        description="A turn dated further ahead of the worker's clock is dead-lettered "
        "(future_event_time): it would move the user's clock, and every age computed from it, "
        "forward for good.",
    )
    stage_retry_initial_seconds: float = Field(
        0.1, gt=0, le=60,
        description="First pause before a stage retries a record whose work failed for a reason "
        "other than the record itself (a passing fault or a bug); it doubles, with jitter, up to "
        "STAGE_RETRY_MAX_SECONDS. Only what is wrong with the record is dead-lettered.",
    )
    stage_retry_max_seconds: float = Field(
        30.0, gt=0, le=3600,
        description="Longest pause between a stage's retries of one record (a passing fault is "
        "retried for as long as it lasts; the partition waits).",
    )
    stage_bug_attempts: int = Field(
        3, ge=1, le=1000,
        description="Attempts at a record whose failure is not a passing fault (not an OSError, a "
        "timeout or a retriable Kafka error) before STAGE_ON_BUG applies.",
    )
    stage_on_bug: Literal["stall", "dead_letter"] = Field(
        "stall",
        description="What a stage does with a record that fails STAGE_BUG_ATTEMPTS times: stall "
        "(keep retrying, /health not ready, alert MemstreamStageStalled: nothing is eaten) or "
        "dead_letter (internal_error, re-driven by `memstream dlq replay` after the fix).",
    )

