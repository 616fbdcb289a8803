"""Dead letters that always fit the broker and never carry a user's content in clear.

A record's bytes are kept whole when they fit `DLQ_MAX_RAW_BYTES`; a larger record keeps its
first bytes, marked `raw_truncated` (a 2 MB text would otherwise make a dead letter larger than
the producer's request limit, and the failed send would stop the partition). The kept bytes
are scanned for secrets (`streams.write.policy`); any found is replaced (`raw_redacted`). They
are then sealed for the record's user (`raw_sealed`), so a purge makes them unreadable; when no
user can be told from the record they are not kept (`raw_withheld`). Size and SHA-256 of the
original are always kept.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re

from streams.pipeline.records import Record
from streams.privacy.sealed import Sealer
from streams.write import policy
from topics.dlq import DeadLetter
from topics.turns import ID_PATTERN

MAX_ERROR_CHARS = 500
_USER_ID = re.compile(ID_PATTERN)


def kept_bytes(raw: bytes, limit: int) -> tuple[bytes, bool, bool]:
    """What a dead letter keeps of `raw`: (bytes, truncated, redacted)."""
    excerpt, truncated = (raw[:limit], True) if len(raw) > limit else (raw, False)
    text = excerpt.decode("utf-8", "replace")
    if not policy.find_secrets(text):
        return excerpt, truncated, False
    return policy.redact(text).encode("utf-8")[:limit], truncated, True


def user_of_record(record: Record) -> str | None:
    """Whose content a record is: its key (every topic is keyed by user_id), else the
    `user_id` of its JSON value; None when neither is a user id."""
    candidates = []
    if record.key:
        candidates.append(record.key.decode("utf-8", "replace"))
    try:
        value = json.loads(record.value or b"")
        if isinstance(value, dict) and isinstance(value.get("user_id"), str):
            candidates.append(value["user_id"])
    except (ValueError, RecursionError):
        pass
    return next((c for c in candidates
                 if len(c) <= 200 and _USER_ID.match(c) and "\ufffd" not in c), None)


def dead_letter_of(record: Record, stage: str, reason: str, detail: str, max_raw_bytes: int,
                   sealer: Sealer | None = None, ref: str | None = None) -> DeadLetter:
    """The dead letter of `record` (see the module doc). `detail` must be content-free.

    Without a `sealer` the kept bytes stay in clear (`raw_b64`): for tools and tests only.
    """
    raw = record.value or b""
    kept, truncated, redacted = kept_bytes(raw, max_raw_bytes)
    user_id = user_of_record(record)
    letter = DeadLetter(
        stage=stage, reason=reason, error=detail[:MAX_ERROR_CHARS], topic=record.topic,
        partition=record.partition, offset=record.offset, key=user_id, raw_size=len(raw),
        raw_sha256=hashlib.sha256(raw).hexdigest(), raw_truncated=truncated, raw_redacted=redacted,
        ref=ref,
    )
    encoded = base64.b64encode(kept).decode("ascii")
    if sealer is None:
        return letter.model_copy(update={"raw_b64": encoded})
    if user_id is None or reason in ("purged_user", "sealed_unreadable"):
        return letter.model_copy(update={"raw_withheld": True})
    return letter.model_copy(update={"raw_sealed": sealer.seal(user_id, encoded)})
