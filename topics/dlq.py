"""Dead-letter records (`chat.turns.dlq`, `memory.commands.dlq`): raw bytes, error, stage."""
from __future__ import annotations

import base64

from pydantic import BaseModel


class DeadLetter(BaseModel):
    """A record a stage could not process. `raw_b64` holds the original bytes untouched."""

    stage: str
    reason: str
    error: str
    topic: str
    partition: int
    offset: int
    key: str | None
    raw_b64: str

    @property
    def raw(self) -> bytes:
        return base64.b64decode(self.raw_b64)

    @classmethod
    def wrap(
        cls, *, stage: str, reason: str, error: str, topic: str, partition: int, offset: int,
        key: bytes | None, raw: bytes,
    ) -> "DeadLetter":
        return cls(
            stage=stage, reason=reason, error=error[:2000], topic=topic, partition=partition,
            offset=offset, key=key.decode("utf-8", "replace") if key is not None else None,
            raw_b64=base64.b64encode(raw).decode("ascii"),
        )
