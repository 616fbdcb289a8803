"""`related_to` edges between a new or updated memory and its close neighbours (SPEC §4)."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from streams.memory.model import Memory

if TYPE_CHECKING:
    from streams.memory.state import MemoryState


def link(state: MemoryState, memory: Memory, neighbours: Sequence[tuple[Memory, float]],
         ts: datetime) -> None:
    """Edges to neighbours scoring at least `link_min`, on both ends, strength = score.

    Edges are keyed by memory id, so a link is never stored twice; each end gets a LINK audit
    entry (no event: linking is incidental to the change that caused it).
    """
    fresh = {m.id: round(score, 4) for m, score in neighbours
             if m.id != memory.id and score >= state.config.link_min
             and memory.relations.get(m.id) != round(score, 4)}
    if not fresh:
        return
    current = {i: state.memory(i) for i in fresh}
    fresh = {i: v for i, v in fresh.items() if (doc := current[i]) is not None and doc.is_visible}
    if not fresh:
        return
    for other_id, strength in [(memory.id, None), *fresh.items()]:
        doc = state.memory(other_id)
        if doc is None:
            continue
        relations = ({**doc.relations, **fresh} if strength is None
                     else {**doc.relations, memory.id: strength})
        linked = doc.model_copy(update={
            "relations": relations, "related_ids": sorted({*doc.related_ids, *relations})})
        state.store(linked)
        state.audit.record_link(linked, ts, fresh if strength is None else {memory.id: strength})
