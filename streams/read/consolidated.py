"""A consolidated memory is found by what it replaced (seed 000 §5: "prefer consolidated; pull
underlying if needed").

Consolidation (`streams/lifecycle/consolidation.py`) archives the episodes it merges, and
their vectors stay in the index (hidden from every query). A query that matches one of those
episodes better than the consolidated summary — 280 characters cannot say everything four
episodes said — should still find the consolidated memory: its cosine is the best of its own
and its originals'. Without this, LoCoMo recall@20 fell from 0.827 to 0.787 after
consolidation (conv-26); see docs/benchmarks.md (lifecycle).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from streams.memory.vector_index import UserIndex


@dataclass
class _Links:
    """Rows of consolidated memories and of their originals, for rows [0, scanned)."""

    scanned: int = 0
    rows: list[int] = field(default_factory=list)
    originals: list[np.ndarray] = field(default_factory=list)


_CACHE: dict[int, tuple[weakref.ref[UserIndex], _Links]] = {}


def _links(index: UserIndex) -> _Links:
    """The index's links, brought up to date by scanning only the rows added since last time
    (rows are only ever appended, and a consolidated memory's originals never change)."""
    cached = _CACHE.get(id(index))
    if cached is None or cached[0]() is not index:
        links = _Links()
        _CACHE[id(index)] = (weakref.ref(index, lambda _, key=id(index): _CACHE.pop(key, None)), links)
    else:
        links = cached[1]
    n = len(index.ids)
    if links.scanned > n:  # cleared and rebuilt under the same object
        links.scanned, links.rows, links.originals = 0, [], []
    for row in range(links.scanned, n):
        memory = index.stored(index.ids[row])
        if memory is not None and memory.type == "consolidated" and memory.consolidated_from:
            found = [r for r in map(index.row, memory.consolidated_from) if r is not None]
            if found:
                links.rows.append(row)
                links.originals.append(np.asarray(found, dtype=np.int64))
    links.scanned = n
    return links


def originals_mask(index: UserIndex) -> np.ndarray:
    """Rows that are originals of a consolidated memory: archived, but answered by the
    consolidated memory (which `lift` raises to their cosine), so never served themselves."""
    mask = np.zeros(len(index), dtype=bool)
    for originals in _links(index).originals:
        mask[originals] = True
    return mask


def lift(index: UserIndex, cosines: np.ndarray) -> np.ndarray:
    """`cosines` (one per row) with each consolidated memory's raised to its best original's."""
    links = _links(index)
    if not links.rows:
        return cosines
    out = cosines.copy()
    for row, originals in zip(links.rows, links.originals):
        out[row] = max(out[row], float(cosines[originals].max()))
    return out
