"""`memory.sinks.dlq`: records a sink could not write (refused by the destination, or still failing
after the retry budget). Keyed by user_id like every topic; replayable into the same sink."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from topics.sealed import Sealed


class SinkDeadLetter(BaseModel):
    """One record a sink gave up on: which sink, the record's key, why, and the record itself."""

    sink: str
    key: str
    reason: str
    op: str
    user_id: str
    record: dict[str, Any]
    sealed: Sealed | None = None
    """The record, sealed for `user_id` (then `record` is empty)."""
