"""Memories said next to the best ones: the neighbours of an answer's top hits (issue 53).

The evidence of a question that takes several memories is often said in one stretch of a
conversation — a few turns apart, the same session — while only one of those turns shares
the question's words; the others rank below the answer. So once an answer is ranked, the
memories said in the same thread within `WINDOW_SECONDS` of one of its `ANCHORS` best hits
are its neighbours, each scored `MIX` x (the anchor's cosine x exp(-distance /
`DECAY_SECONDS`)) + (1 - `MIX`) x its own cosine; the best `slots` of them whose source turns
the answer does not hold yet take the places after the first `START` items (which they leave
as they were), and the items they displace move down by as many. No model call: the
memories' thread and creation time (when the turn was said) are read from the index.
LoCoMo dev (six conversations, `bench locomo`), 2 slots: recall_all@10 0.651 -> 0.672 (every
conversation higher), recall_any@10 0.785 -> 0.803, @5 unchanged, @20 0.861 -> 0.869, context
words @10 147 -> 142. Without the same-thread window (the best cosines among all turns the
answer lacks) recall_all@10 gains 0.018 instead of 0.022, @20 0.005 instead of 0.014 (in
process, the same memories).
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import Field, replace
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from streams.memory.model import Memory
from streams.memory.vector_index import UserIndex


class RankedHit(Protocol):
    """A hit of an answer (`streams.read.query.QueryHit`): a dataclass with a memory and its
    cosine to the query."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def memory(self) -> Memory: ...

    @property
    def similarity(self) -> float: ...


H = TypeVar("H", bound=RankedHit)

ANCHORS = 3
"""How many of the answer's best hits bring in their neighbours."""
START = 5
"""The first items of an answer, which neighbours never displace."""
WINDOW_SECONDS = 300.0
"""How far from an anchor (the time its memory was made, in the same thread) a neighbour is."""
DECAY_SECONDS = 150.0
"""The time constant of the anchor's share of a neighbour's score."""
MIX = 0.5
"""The anchor's share of a neighbour's score (the rest: the neighbour's own cosine)."""
RELATED_ANCHORS = 5
"""How many of the answer's best hits bring in the memories linked to them (`related`)."""
ENTITY_STRENGTH = 0.8
"""The link strength of two memories of one entity (`same_entity`): as strong as a close
`related_to` edge (those start at LINK_MIN)."""


def neighbours(index: UserIndex, hits: Sequence[RankedHit], cosines: np.ndarray, mask: np.ndarray,
               slots: int, accept: Callable[[Memory], bool] | None = None,
               fits: Callable[[Memory], bool] | None = None) -> list[tuple[Memory, float]]:
    """The best `slots` neighbours of the first `ANCHORS` of `hits` (ranked), as (memory,
    score), best first: semantic memories of rows in `mask` that `accept` (when given) and
    `fits` take, none of them among the first `START + slots` hits, each adding a source turn
    that neither those hits nor the neighbours before it come from."""
    if slots <= 0 or len(hits) <= START:
        return []
    kept = hits[:START + slots]
    chosen, said = _held(kept)
    created = index.columns().created
    best: dict[int, float] = {}
    for hit in hits[:ANCHORS]:
        row = index.row(hit.memory.id)
        thread = hit.memory.thread_id
        if row is None or not thread:
            continue
        distance = np.abs(created - created[row])
        for other in np.flatnonzero(mask & (distance <= WINDOW_SECONDS)):
            memory = index.stored(index.ids[other])
            if memory is None or memory.thread_id != thread or not _adds(memory, chosen, said):
                continue
            score = (MIX * hit.similarity * float(np.exp(-distance[other] / DECAY_SECONDS))
                     + (1 - MIX) * float(cosines[other]))
            if score > best.get(int(other), -np.inf):
                best[int(other)] = score
    return _best_new(index, best, slots, accept, fits)


def related(index: UserIndex, hits: Sequence[RankedHit], cosines: np.ndarray, mask: np.ndarray,
            slots: int, start: int, accept: Callable[[Memory], bool] | None = None,
            fits: Callable[[Memory], bool] | None = None) -> list[tuple[Memory, float]]:
    """The best `slots` memories the relations layer links to the first `RELATED_ANCHORS` of
    `hits` (the `related_to` edges the link stage wrote, seed 001 §2), as (memory, score), best
    first: each scored `MIX` x (the anchor's cosine x the edge's strength) + (1 - `MIX`) x its
    own cosine, a semantic memory of a row in `mask` that `accept` and `fits` take, none of
    the first `start + slots` hits, each adding a source turn they and the ones before it lack.
    A memory linked to an answer's best hits is about the same thing said another time: the
    other occurrence of an event, the other half of a "both" (issue 53). A memory of the same
    entity (its entity key but for the last part: `profile:pet:luna:age` and
    `profile:pet:luna:breed`) counts as linked at `ENTITY_STRENGTH`."""
    if slots <= 0 or len(hits) <= start:
        return []
    chosen, said = _held(hits[:start + slots])
    best: dict[int, float] = {}
    for hit in hits[:RELATED_ANCHORS]:
        links = {**{m.id: ENTITY_STRENGTH for m in same_entity(index, hit.memory)},
                 **hit.memory.relations}
        for other_id, strength in links.items():
            row = index.row(other_id)
            memory = index.stored(other_id)
            if row is None or memory is None or not mask[row] or not _adds(memory, chosen, said):
                continue
            score = MIX * hit.similarity * strength + (1 - MIX) * float(cosines[row])
            if score > best.get(row, -np.inf):
                best[row] = score
    return _best_new(index, best, slots, accept, fits)


def same_entity(index: UserIndex, memory: Memory) -> list[Memory]:
    """The other visible memories of `memory`'s entity: an entity key like its own but for the
    last part (the attribute); none when it has no key of two parts or more."""
    key = memory.entity_key
    if not key or ":" not in key:
        return []
    entity = key.rsplit(":", 1)[0]
    return [m for m in index.with_entity_key(lambda k: k.rsplit(":", 1)[0] == entity)
            if m.id != memory.id]


def _held(kept: Sequence[RankedHit]) -> tuple[set[str], set[str]]:
    """The ids of `kept` hits and the source turns they come from."""
    return ({h.memory.id for h in kept},
            {turn for h in kept for turn in h.memory.source_turn_ids})


def _adds(memory: Memory, chosen: set[str], said: set[str]) -> bool:
    """Whether `memory` may join an answer holding `chosen` (ids) from `said` (turns): a
    semantic memory not in it with a source turn it lacks."""
    return (memory.id not in chosen and memory.type == "semantic" and bool(memory.source_turn_ids)
            and not set(memory.source_turn_ids) <= said)


def _best_new(index: UserIndex, best: dict[int, float], slots: int,
              accept: Callable[[Memory], bool] | None,
              fits: Callable[[Memory], bool] | None) -> list[tuple[Memory, float]]:
    """The `slots` best rows of `best` (row -> score) as served memories, each with a source
    turn the ones before it lack, that `accept` and `fits` take."""
    out: list[tuple[Memory, float]] = []
    taken: set[str] = set()
    for row, score in sorted(best.items(), key=lambda kv: (-kv[1], kv[0])):
        stored = index.stored(index.ids[row])
        assert stored is not None
        turns = set(stored.source_turn_ids)
        if turns <= taken or (accept is not None and not accept(stored)) or (
                fits is not None and not fits(stored)):
            continue
        out.append((index.served(stored.id), score))
        taken |= turns
        if len(out) >= slots:
            break
    return out


def with_neighbours(hits: list[H], found: Sequence[tuple[Memory, float]],
                    cosines: np.ndarray, index: UserIndex, top_k: int, start: int = START,
                    keep: Collection[str] = ()) -> list[H]:
    """`hits` (ranked) with the `found` memories after the first `start`, at most `top_k`
    items: the items they displace are the last ones not in `keep` (the ids an answer must
    hold: each part's evidence of a combining question, `streams.read.evidence.gather`). A
    placed memory shows the ranking and calibrated scores of the item whose place it takes, so
    scores stay non-increasing along the answer (a threshold keeps a prefix)."""
    if not found or len(hits) <= start:
        return hits[:top_k]
    slot = hits[start]
    ids = {m.id for m, _ in found}
    placed = []
    for memory, _ in found:
        row = index.row(memory.id)
        similarity = float(cosines[row]) if row is not None else slot.similarity
        placed.append(replace(slot, memory=memory, similarity=similarity, relevance=similarity))
    rest = [h for h in hits[start:] if h.memory.id not in ids]
    out = [*hits[:start], *placed, *rest]
    over = len(out) - top_k
    if over > 0:
        dropped = set([i for i in range(len(out) - 1, start + len(placed) - 1, -1)
                       if out[i].memory.id not in keep][:over])  # the last ones first
        out = [h for i, h in enumerate(out) if i not in dropped]
    return out[:top_k]
