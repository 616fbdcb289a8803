"""Deterministic ids (docs/architecture.md#bad-input): a replay of the same turns yields the same ids.

Each id is a UUID 5 of its parts as a JSON array, so ids that contain any separator still name
exactly one memory or event (users `a` and `a|x` never share one).
"""
from __future__ import annotations

import hashlib
import uuid

from streams.memory.tables import composite_key

_NS = uuid.UUID("6b1d4f3e-2f7a-5c1e-9a57-6d656d737472")  # fixed namespace of memstream ids


def memory_id(user_id: str, thread_id: str, turn_id: str, fact_index: int) -> str:
    """Id of the memory first created from fact `fact_index` of one turn."""
    return uuid5_text(composite_key("memory", user_id, thread_id, turn_id, str(fact_index)))


def event_id(memory_id_: str, kind: str, version: int) -> str:
    """Id of the event announcing version `version` of a memory."""
    return uuid5_text(composite_key("event", memory_id_, kind, str(version)))


_NS_BYTES = _NS.bytes


def uuid5_text(name: str) -> str:
    """`str(uuid.uuid5(_NS, name))` without the two `UUID` objects it builds (an id is made
    several times for every candidate): the SHA-1 of namespace and name, with RFC 4122's
    version (5) and variant bits set, in the canonical form."""
    raw = bytearray(hashlib.sha1(_NS_BYTES + name.encode("utf-8")).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
