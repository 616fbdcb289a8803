"""Deterministic ids (docs/architecture.md#bad-input): a replay of the same turns yields the same ids.

Each id is a UUID 5 of its parts as a JSON array, so ids that contain any separator still name
exactly one memory or event (users `a` and `a|x` never share one).
"""
from __future__ import annotations

import uuid

from streams.memory.tables import composite_key

_NS = uuid.UUID("6b1d4f3e-2f7a-5c1e-9a57-6d656d737472")  # fixed namespace of memstream ids


def memory_id(user_id: str, thread_id: str, turn_id: str, fact_index: int) -> str:
    """Id of the memory first created from fact `fact_index` of one turn."""
    return str(uuid.uuid5(_NS, composite_key("memory", user_id, thread_id, turn_id, str(fact_index))))


def event_id(memory_id_: str, kind: str, version: int) -> str:
    """Id of the event announcing version `version` of a memory."""
    return str(uuid.uuid5(_NS, composite_key("event", memory_id_, kind, str(version))))
