"""A memory replaced by a newer one (a changed value): how the candidate path and an accepted
consent proposal both do it."""
from __future__ import annotations

from datetime import datetime

from streams.memory.model import Memory
from streams.memory.state import MemoryState
from topics.events import MemoryEvent


def supersede(state: MemoryState, old: Memory, new: Memory, thread_id: str, ts: datetime) -> MemoryEvent:
    """Never overwrite silently: the old memory stays, superseded, with `valid_to`, linked."""
    changed = old.model_copy(update={
        "state": "superseded", "valid_to": ts, "superseded_by": new.id, "updated_at": ts,
        "pending_change": None,
        "related_ids": sorted({*old.related_ids, new.id}), "version": old.version + 1,
    })
    state.store(changed)
    return state.announce("superseded", changed, thread_id, ts, {"superseded_by": new.id}, old=old)
