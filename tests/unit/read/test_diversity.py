"""Maximal marginal relevance over the ranked candidates (`streams.read.diversity`)."""
from dataclasses import dataclass

import numpy as np
import pytest

from streams.read.diversity import diversified_order, diversify
from streams.read.query import rank
from tests.unit.read.test_query_execute import NOW, Q, index_of, mem
from tests import defaults

DIM = 16


def unit(*xs: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(xs)] = xs
    return v / np.linalg.norm(v)


def test_a_paraphrase_yields_its_place_to_a_different_memory():
    vectors = np.stack([unit(1, 0), unit(0.95, 0.31), unit(0, 1)])  # 0 and 1 say one thing
    order, marginal = diversified_order(np.array([1.0, 0.95, 0.9]), vectors, 0.2)
    assert order == [0, 2, 1]
    assert marginal == pytest.approx([1.0, 0.9, 0.95 - 0.2 * float(vectors[0] @ vectors[1])], abs=1e-6)
    assert marginal == sorted(marginal, reverse=True)
    assert diversified_order(np.array([1.0, 0.95, 0.9]), vectors, 0.0)[0] == [0, 1, 2]


@dataclass(frozen=True)
class Hit:
    name: str
    score: float


def test_diversify_rescores_so_sorting_keeps_the_order():
    vectors = np.stack([unit(1, 0), unit(0.95, 0.31), unit(0, 1)])
    hits = [Hit("a", 1.0), Hit("a2", 0.95), Hit("b", 0.9)]
    out = diversify(hits, vectors, 0.2)
    assert [h.name for h in out] == ["a", "b", "a2"]
    assert sorted(out, key=lambda h: -h.score) == out
    assert [h.name for h in diversify(hits[::-1], vectors[::-1], 0.0)] == ["a", "a2", "b"]


def test_rank_does_not_fill_the_answer_with_paraphrases():
    index = index_of((mem("luna"), 0.9), (mem("other"), 0.86), (mem("far"), 0.5))
    # "luna-again": cosine 0.88 to Q, and off Q mostly along luna's own axis (1): 0.99 to luna
    off_q = 0.956 * np.eye(DIM, dtype=np.float32)[1] + 0.293 * np.eye(DIM, dtype=np.float32)[4]
    paraphrase = 0.88 * Q + np.sqrt(1 - 0.88 ** 2) * off_q / np.linalg.norm(off_q)
    index.upsert(mem("luna-again"), paraphrase.astype(np.float32))
    top2 = lambda w: [h.memory.id for h in rank(index, Q, top_k=2, candidates=4, weights=w, now=NOW)]
    assert top2(defaults.weights(diversity=0.0)) == ["luna", "luna-again"]
    assert top2(defaults.weights()) == ["luna", "other"]
