"""Deterministic ids (SPEC §7): a replay of the same turns yields the same ids."""
from __future__ import annotations

import uuid

_NS = uuid.UUID("6b1d4f3e-2f7a-5c1e-9a57-6d656d737472")  # fixed namespace of memstream ids


def memory_id(user_id: str, source_ref: str, fact_index: int) -> str:
    """Id of the memory first created from fact `fact_index` of turn `source_ref`."""
    return str(uuid.uuid5(_NS, f"memory|{user_id}|{source_ref}|{fact_index}"))


def event_id(memory_id_: str, kind: str, version: int) -> str:
    """Id of the event announcing version `version` of a memory."""
    return str(uuid.uuid5(_NS, f"event|{memory_id_}|{kind}|{version}"))
