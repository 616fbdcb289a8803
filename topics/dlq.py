"""Dead-letter records (`chat.turns.dlq`, `memory.commands.dlq`, `memory.candidates.dlq`).

A dead letter says which stage gave up on which record and why, and keeps what the record was:
its bytes when they fit, otherwise their first `DLQ_MAX_RAW_BYTES` bytes, marked
`raw_truncated`; always the original size, and a keyed HMAC of it (`raw_hmac`), so an operator
with the master key can match it with the producer's copy. Bytes carrying a detected secret are
never kept in clear: the text is kept with each secret replaced by a marker, and `raw_redacted`
says so. The kept bytes are sealed for the record's user (`raw_sealed`, opened with
`streams/tools/unseal.py`); when no user can be told from the record they are not kept at all
(`raw_withheld`).
"""
from __future__ import annotations

import base64

from pydantic import BaseModel

from topics.sealed import Sealed


class DeadLetter(BaseModel):
    """A record a stage could not process."""

    stage: str
    reason: str
    error: str
    topic: str
    partition: int
    offset: int
    key: str | None
    raw_b64: str = ""
    """The kept bytes in clear (only records that carry no user content: none today)."""
    raw_size: int = 0
    """Size of the original record value in bytes."""
    raw_sha256: str = ""
    """Unkeyed SHA-256 (hex) of the original value: only in letters of earlier versions (it
    confirmed a guess of a short turn to anyone, even after a purge); see `raw_hmac`."""
    raw_hmac: str = ""
    """HMAC-SHA256 (hex) of the original value under a key derived from the master key
    (`streams.pipeline.dead_letters.raw_digest`); empty in letters built without a sealer."""
    raw_truncated: bool = False
    """`raw_b64` holds only the first bytes of the value (it did not fit a dead letter)."""
    raw_redacted: bool = False
    """The kept bytes are the value's text with detected secrets replaced, not the original."""
    raw_sealed: Sealed | None = None
    """The kept bytes (base64), sealed for the record's user."""
    raw_withheld: bool = False
    """No user could be told from the record: its bytes are not kept, only size and digest."""
    ref: str | None = None
    """What failed, when it could be read: a command's id, a turn's `thread:turn`."""

    @property
    def raw(self) -> bytes:
        return base64.b64decode(self.raw_b64)
