"""Dead letters that always fit the broker and never carry a detected secret in clear.

A record's bytes are kept whole when they fit `DLQ_MAX_RAW_BYTES`; a larger record keeps its
first bytes, marked `raw_truncated` (a 2 MB text would otherwise make a dead letter larger than
the producer's request limit, and the failed send would stop the partition). The kept bytes are
scanned for secrets (`streams.write.policy`); if any is found the letter keeps the text with each
secret replaced, marked `raw_redacted`. Size and SHA-256 of the original are always kept.
"""
from __future__ import annotations

import base64
import hashlib

from streams.pipeline.records import Record
from streams.write import policy
from topics.dlq import DeadLetter

MAX_ERROR_CHARS = 500
MAX_KEY_CHARS = 200


def kept_bytes(raw: bytes, limit: int) -> tuple[bytes, bool, bool]:
    """What a dead letter keeps of `raw`: (bytes, truncated, redacted)."""
    excerpt, truncated = (raw[:limit], True) if len(raw) > limit else (raw, False)
    text = excerpt.decode("utf-8", "replace")
    if not policy.find_secrets(text):
        return excerpt, truncated, False
    return policy.redact(text).encode("utf-8")[:limit], truncated, True


def dead_letter_of(record: Record, stage: str, reason: str, detail: str, max_raw_bytes: int) -> DeadLetter:
    """The dead letter of `record` (see the module doc). `detail` must be content-free."""
    raw = record.value or b""
    kept, truncated, redacted = kept_bytes(raw, max_raw_bytes)
    key = record.key.decode("utf-8", "replace")[:MAX_KEY_CHARS] if record.key is not None else None
    if key is not None and policy.find_secrets(key):
        key = policy.redact(key)
    return DeadLetter(
        stage=stage, reason=reason, error=detail[:MAX_ERROR_CHARS], topic=record.topic,
        partition=record.partition, offset=record.offset, key=key,
        raw_b64=base64.b64encode(kept).decode("ascii"), raw_size=len(raw),
        raw_sha256=hashlib.sha256(raw).hexdigest(), raw_truncated=truncated, raw_redacted=redacted,
    )
