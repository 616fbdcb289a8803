"""`related_to` edges between a new or updated memory and its close neighbours (docs/architecture.md#write-path)."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from streams.memory.model import Memory
from streams.memory.state import MemoryState


def link(state: MemoryState, memory: Memory, neighbours: Sequence[tuple[Memory, float]],
         ts: datetime) -> None:
    """Edges from `memory` to neighbours scoring at least `link_min`, strength = score.

    An edge is stored once, on `memory` (the index serves the other end with it too: see
    `UserIndex`), keyed by memory id, so a link is never stored twice; `memory` gets one LINK
    audit entry listing the new edges (no event: linking is incidental to the change that
    caused it).
    """
    fresh = {m.id: round(score, 4) for m, score in neighbours
             if m.id != memory.id and score >= state.config.link_min
             and memory.relations.get(m.id) != round(score, 4)}
    user_index = state.index.user(memory.user_id)  # as changed by this candidate so far
    fresh = {i: v for i, v in fresh.items()
             if (other := user_index.stored(i)) is not None and other.is_visible
             and memory.id not in other.relations}  # the edge is stored on `other` already
    if not fresh:
        return
    doc = state.memory(memory.id)
    if doc is None:
        return
    relations = {**doc.relations, **fresh}
    linked = doc.model_copy(update={
        "relations": relations, "related_ids": sorted({*doc.related_ids, *relations})})
    state.store(linked)
    state.audit.record_link(linked, ts, fresh)
