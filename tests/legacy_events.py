"""`memory.events` records in the form written before one event a record (issue 50): one user's
events of a stage batch as a JSON array, deflated behind the byte 0x02 when that was shorter
(`topics.deflated`). Tests write them to show every reader still reads a topic that holds them."""
from __future__ import annotations

from collections.abc import Sequence

from topics.deflated import deflated


def batched_record(events: Sequence[bytes]) -> bytes:
    """The record a batch's events (each a `MemoryEvent`'s JSON) made before: the JSON array,
    deflated when that is shorter (what `topics.events.events_record` wrote)."""
    return deflated(b"[" + b",".join(events) + b"]")
