"""Dead letters that always fit the broker and never carry a user's content in clear.

A record's bytes are kept whole when they fit `DLQ_MAX_RAW_BYTES`; a larger record keeps its
first bytes, marked `raw_truncated` (a 2 MB text would otherwise make a dead letter larger than
the producer's request limit, and the failed send would stop the partition). The kept bytes
are scanned for secrets (`streams.write.policy`); any found is replaced (`raw_redacted`). They
are then sealed for the record's user (`raw_sealed`), so a purge makes them unreadable; when no
user can be told from the record they are not kept (`raw_withheld`). The original's size is
always kept, and with a sealer its HMAC-SHA256 (`raw_digest`) under a key derived from the master
key: an unkeyed hash would confirm a guess of a short turn to anyone, even after its user's purge.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from streams.pipeline.records import Record
from streams.privacy.placement import MisroutedRecord
from streams.privacy.sealed import Sealer
from streams.write import policy
from topics.dlq import DeadLetter
from topics.sealed import Sealed
from topics.turns import ID_PATTERN

MAX_ERROR_CHARS = 500
_USER_ID = re.compile(ID_PATTERN)
DIGEST_LABEL = b"memstream dead-letter raw digest v1"


def digest_key(master_key: bytes) -> bytes:
    """The key of dead letters' raw digests: a key of its own, derived from the master key
    (HKDF-SHA256 under its own label)."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=DIGEST_LABEL).derive(master_key)


def raw_digest(key: bytes, raw: bytes) -> str:
    """HMAC-SHA256 (hex) of a record's bytes under `key` (`digest_key`): it matches a dead letter
    with the producer's copy for whoever holds the master key, and confirms nothing to anyone
    else."""
    return hmac.new(key, raw, hashlib.sha256).hexdigest()


def _master_key(sealer: Sealer) -> bytes:
    """The master key behind `sealer` (the current one, which wraps)."""
    return sealer.keys.master_key


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

    Without a `sealer` the kept bytes stay in clear (`raw_b64`), with no digest: for tools and
    tests only.
    """
    raw = record.value or b""
    kept, truncated, redacted = kept_bytes(raw, max_raw_bytes)
    user_id = user_of_record(record)
    digest = raw_digest(digest_key(_master_key(sealer)), raw) if sealer is not None else ""
    letter = DeadLetter(
        stage=stage, reason=reason, error=detail[:MAX_ERROR_CHARS], topic=record.topic,
        partition=record.partition, offset=record.offset, key=user_id, raw_size=len(raw),
        raw_hmac=digest, raw_truncated=truncated, raw_redacted=redacted, ref=ref,
    )
    encoded = base64.b64encode(kept).decode("ascii")
    if sealer is None:
        return letter.model_copy(update={"raw_b64": encoded})
    sealed = sealed_for_owner(record, user_id, reason, encoded, sealer)
    if sealed is None:
        return letter.model_copy(update={"raw_withheld": True})
    return letter.model_copy(update={"raw_sealed": sealed})


WITHHELD_REASONS = ("purged_user", "sealed_unreadable", "wrong_partition")
"""Dead letters that never keep the record's bytes: its user was purged, or the record is not
on its user's partition (`streams.privacy.placement`)."""


def sealed_for_owner(record: Record, user_id: str | None, reason: str, encoded: str,
                     sealer: Sealer) -> Sealed | None:
    """The kept bytes sealed for the record's user; None (withheld) for a record without a
    user_id key (a keyless record is not placed by its user: the partition it landed on is not
    the user's), for `WITHHELD_REASONS`, and for a record on another partition than its user's.
    A key made there would belong to no partition the user lives on, and a purge would miss it."""
    if user_id is None or record.key != user_id.encode("utf-8") or reason in WITHHELD_REASONS:
        return None
    try:
        return sealer.seal(user_id, encoded)
    except MisroutedRecord:
        return None
