"""Settings of one concern: input limits and dead letters (docs/configuration.md#input)."""
from __future__ import annotations

from typing import ClassVar

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
