"""The similarity term scaled over the candidate pool (`ranking.pool_relevance`)."""
from datetime import datetime, timezone

import numpy as np
import pytest

from streams.settings import Settings
from streams.memory.model import Memory
from streams.memory.vector_index import UserIndex
from streams.read.query import rank
from streams.read.ranking import pool_relevance, weights_of
from tests import defaults

NOW = datetime(2024, 5, 15, 12, tzinfo=timezone.utc)
DIM = 8
Q = np.eye(DIM, dtype=np.float32)[0]


def test_best_is_one_worst_is_zero():
    assert pool_relevance(np.array([0.9, 0.7, 0.4]), 0.3).tolist() == pytest.approx([1.0, 0.6, 0.0])


def test_a_narrow_pool_is_stretched_no_more_than_min_spread():
    assert pool_relevance(np.array([0.80, 0.75]), 0.3).tolist() == pytest.approx([1.0, 1 - 0.05 / 0.3])
    assert pool_relevance(np.array([0.5]), 0.3).tolist() == [1.0]
    assert pool_relevance(np.array([]), 0.3).size == 0


def mem(i: str, importance: int) -> Memory:
    return Memory(id=i, user_id="u", type="semantic", summary=f"fact {i}", importance=importance,
                  created_at=NOW, updated_at=NOW, last_accessed=NOW)


def index_of(*pairs: tuple[Memory, float]) -> UserIndex:
    index = UserIndex(DIM)
    for axis, (memory, cosine) in enumerate(pairs, start=1):
        v = cosine * Q + np.sqrt(1 - cosine ** 2) * np.eye(DIM, dtype=np.float32)[axis]
        index.upsert(memory, v.astype(np.float32))
    return index


def test_an_important_weak_match_no_longer_outranks_the_best_match():
    # A pool whose relevance spans 0.5 (as a real one does, ~0.3): the best match (0.9) is
    # trivial, an important memory matches less (0.7). On the raw cosine the importance term
    # (0.20, seed 002's weight) outweighs the similarity one (0.55 x 0.2); scaled over the pool it does not.
    index = index_of((mem("answer", 1), 0.9), (mem("important", 5), 0.7), (mem("far", 1), 0.4))
    raw = rank(index, Q, top_k=3, candidates=3, weights=defaults.weights(relevance_norm="raw", importance=0.20, recency=0.15), now=NOW)
    pooled = rank(index, Q, top_k=3, candidates=3, weights=defaults.weights(), now=NOW)
    assert [h.memory.id for h in raw][0] == "important"
    assert [h.memory.id for h in pooled] == ["answer", "important", "far"]
    assert pooled[0].similarity == pytest.approx(0.9, abs=1e-3), "similarity stays the cosine (float16 storage)"


def test_settings_choose_the_scaling():
    w = weights_of(Settings(rank_relevance_norm="raw", rank_relevance_min_spread=0.5).read)  # type: ignore[call-arg]
    assert (w.relevance_norm, w.relevance_min_spread) == ("raw", 0.5)
    assert weights_of(Settings().read).relevance_norm == "pool"  # type: ignore[call-arg]
