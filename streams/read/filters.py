"""The filters of `memory.query`, applied before ranking (seed 001 §6.1: server-side).

Category allowlist, state, pinned, importance and update times are numpy masks over the index's
columns; agent/run/actor/role are checked per candidate. Both only ever narrow the search.
"""
from __future__ import annotations

from datetime import datetime, time, timedelta, timezone
from typing import Callable

import numpy as np

from streams.memory.model import Memory
from streams.language.dates import DateWindow
from streams.memory.vector_index import UserIndex
from topics.query import QueryFilters


def base_mask(index: UserIndex, categories: frozenset[str], filters: QueryFilters,
              tier: np.ndarray | None = None) -> np.ndarray:
    """Rows in `tier` (the active ones when None), in an allowed category, and passing the
    column filters."""
    cols = index.columns()
    codes = [index.category_codes[c] for c in categories if c in index.category_codes]
    rows = cols.visible if tier is None else tier
    mask = rows & np.isin(cols.category, np.asarray(codes, dtype=np.int32))
    if filters.pinned is not None:
        mask &= cols.pinned == filters.pinned
    if filters.importance_min is not None:
        mask &= cols.importance >= filters.importance_min
    if filters.importance_max is not None:
        mask &= cols.importance <= filters.importance_max
    if filters.after is not None:
        mask &= cols.updated >= filters.after.timestamp()
    if filters.before is not None:
        mask &= cols.updated <= filters.before.timestamp()
    return mask


def window_mask(index: UserIndex, window: DateWindow) -> np.ndarray:
    """Rows of memories in `window`: said on a day inside it, or mentioning dates that overlap
    it ("Ana painted it in 2022", said in 2023, is in 2022). The day a memory was said is its
    `date_iso` (the user's calendar) when it has one (episodic memories), else the UTC day it
    was created on."""
    cols = index.columns()
    start, end = (int(d.strftime("%Y%m%d")) for d in (window.start, window.end))
    first = datetime.combine(window.start, time.min, timezone.utc).timestamp()
    after = datetime.combine(window.end + timedelta(days=1), time.min, timezone.utc).timestamp()
    said = np.where(cols.day > 0, (cols.day >= start) & (cols.day <= end),
                    (cols.created >= first) & (cols.created < after))
    mentioned = (cols.event_start > 0) & (cols.event_start <= end) & (cols.event_end >= start)
    return said | mentioned


def episodic_mask(index: UserIndex, window: DateWindow | None) -> np.ndarray:
    """Rows of episodic memories, in `window` when there is one (`window_mask`)."""
    mask = index.columns().episodic
    if window is not None:
        mask &= window_mask(index, window)
    return mask


def row_predicate(filters: QueryFilters) -> Callable[[Memory], bool] | None:
    """The filters on provenance fields (agent, run, actor, role), or None when none is set."""
    wanted = {name: value for name, value in (
        ("agent_id", filters.agent_id), ("run_id", filters.run_id), ("actor_id", filters.actor_id),
        ("role", filters.role.value if filters.role is not None else None)) if value is not None}
    if not wanted:
        return None
    return lambda memory: all(getattr(memory, name) == value for name, value in wanted.items())
