"""Maximal marginal relevance over the ranked candidates (Carbonell and Goldstein, SIGIR 1998).

A memory store holds the same fact said several ways (a merge keeps one, but paraphrases below
the dedup band stay: "Ana loves turtles", "What can Ana say, Ana loves turtles"), and the
best few slots of an answer then repeat one thing while the memory that answers the question
sits just below them. So the answer is built greedily: each next item is the candidate whose
score, minus `penalty` times its highest cosine to the items already chosen, is the best. The
penalty is in the units of the ranking score (whose similarity term spans [0, 0.55] over the
pool, `ranking.pool_relevance`): at 0.2 a paraphrase (cosine ~0.9) loses ~0.18, a memory on
another subject (cosine ~0.2) ~0.04. LoCoMo recall_any@5 0.656 -> 0.673 (both halves of the dev
set: +0.018, +0.016), @10 unchanged (+0.003, +0.002).
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import Field, replace
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np


class ScoredHit(Protocol):
    """A hit `diversify` reorders: a dataclass (its `score` is replaced) with a score."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def score(self) -> float: ...


H = TypeVar("H", bound=ScoredHit)


def diversified_order(scores: np.ndarray, vectors: np.ndarray, penalty: float,
                      sources: Sequence[Collection[str]] | None = None,
                      said_penalty: float = 0.0) -> tuple[list[int], list[float]]:
    """The greedy MMR order of the candidates and each one's marginal score when chosen (a
    non-increasing sequence: a candidate's marginal score only falls as items are chosen).

    `scores` are the candidates' ranking scores, `vectors` their L2-normalised rows. With
    `sources` (each candidate's source turns) and `said_penalty`, a candidate all of whose
    turns the chosen items already come from loses `said_penalty` too: a second memory of
    one sentence adds less to an answer than a memory of another one does, however different
    its wording (LoCoMo recall_all@10 +0.6 points at 0.2, recall_any@5..20 not lower).
    """
    n = len(scores)
    remaining = np.ones(n, dtype=bool)
    closest = np.full(n, -np.inf) if n else np.zeros(0)
    base = np.asarray(scores, dtype=np.float64)
    turns = [frozenset(s) for s in sources] if sources is not None and said_penalty > 0 else None
    said: set[str] = set()
    order: list[int] = []
    marginal: list[float] = []
    for _ in range(n):
        values = base - penalty * np.maximum(closest, 0.0) if order else base.copy()
        if turns is not None and said:
            values -= said_penalty * np.fromiter(
                (bool(t) and t <= said for t in turns), dtype=np.float64, count=n)
        values[~remaining] = -np.inf
        best = int(np.argmax(values))
        order.append(best)
        marginal.append(float(values[best]))
        remaining[best] = False
        closest = np.maximum(closest, vectors @ vectors[best])
        if turns is not None:
            said |= turns[best]
    return order, marginal


def diversify(hits: Sequence[H], vectors: np.ndarray, penalty: float,
              sources: Sequence[Collection[str]] | None = None,
              said_penalty: float = 0.0) -> list[H]:
    """`hits` (QueryHit-like: a `score` field, in any order) in their MMR order, each one's
    `score` replaced by its marginal score, so sorting by score keeps that order. Unchanged
    (but sorted by score) when both penalties are 0 or there are fewer than two hits;
    `sources` and `said_penalty` as in `diversified_order`."""
    if (penalty <= 0 and said_penalty <= 0) or len(hits) < 2:
        return sorted(hits, key=lambda h: -h.score)
    order, marginal = diversified_order(np.array([h.score for h in hits]),
                                        vectors, penalty, sources, said_penalty)
    return [replace(hits[i], score=value) for i, value in zip(order, marginal)]
