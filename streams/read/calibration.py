"""The `score` of a query item: the probability that it answers the query (issues 25, 50).

The ranking score (`streams.read.ranking`) chooses an answer's items; it is scaled over the
candidate pool, so 0.85 for the best of a bad pool and 0.85 for the best of a good one say
nothing alike, and alone no threshold would mean the same across users or queries. The
relevance (the cosine in dense retrieval, the fused dense + BM25 relevance in hybrid:
`streams.read.fusion`) is on one scale for every query, but says nothing of the rest of the
user's memories or of what the formula adds (importance, recency, pinned, a repeat's diversity
penalty). An item's `score` is a logistic curve of both, fitted per embedder and retrieval mode
on the LoCoMo development questions, where an item "answers" when its provenance holds an
evidence turn (`python -m benchmarks.score_calibration`). It is the one number of an answer:
the scores are made to fall along the ranking's order (`in_order`), so the answer lists its
items by the score they show, and `threshold` (and `QUERY_THRESHOLD`, which bullets honour by
default) compares with it and drops only an answer's tail. (Until issue 50 the curve had the
relevance alone and nothing kept it in the ranking's order: a listing read 0.311, 0.139, 0.170.)

The curves are the embedder's cosine scale: a model with no measured curve gets the default
model's (`FALLBACK`), which is only as right as the two models' scales agree.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ScoreCurve:
    """`score = 1 / (1 + exp(-(slope · relevance + rank_slope · rank_score + intercept)))`."""

    slope: float
    intercept: float
    rank_slope: float = 0.0
    """Weight of the ranking score (a curve of relevance alone has 0)."""

    def score(self, relevance: float, rank_score: float = 0.0) -> float:
        """The probability that an item of this relevance and ranking score answers the query."""
        z = self.slope * relevance + self.rank_slope * rank_score + self.intercept
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


CURVES: dict[tuple[str, str], ScoreCurve] = {
    # The six LoCoMo development conversations, the defaults (lifecycle on, memories searched
    # with their context vectors, `streams.write.contextual`), top 20 per question: expected
    # calibration error 0.008-0.009 (0.005-0.011 fitted on one half, measured on the other)
    # with each curve. Refitted when context vectors came: the old curves served them at
    # 0.015-0.022.
    ("all-MiniLM-L6-v2 onnx-int8", "hybrid"): ScoreCurve(6.03, -6.33, rank_slope=1.67),
    ("all-MiniLM-L6-v2 onnx-int8", "dense"): ScoreCurve(9.66, -8.49),
    ("all-MiniLM-L6-v2 onnx", "hybrid"): ScoreCurve(8.28, -7.22),
    ("all-MiniLM-L6-v2 onnx", "dense"): ScoreCurve(9.42, -8.35),
}
"""(embedder profile name, retrieval mode) -> its curve, as `score_calibration` printed it."""
FALLBACK = CURVES[("all-MiniLM-L6-v2 onnx-int8", "hybrid")]


def curve_for(profile: str, mode: str) -> ScoreCurve:
    """The measured curve of this embedder and retrieval mode, else `FALLBACK`."""
    return CURVES.get((profile, mode), FALLBACK)


def in_order(scores: Sequence[float]) -> list[float]:
    """`scores` made non-increasing along their order, by pooling adjacent violators: where an
    item stands above one that scores higher, both get their mean (the isotonic regression of
    the scores on the order, Ayer et al. 1955). Each pooled block keeps its total, so the shares
    answered that the scores promise stay what they were, block by block.

    Why: the ranking formula orders an answer (its importance, recency, pinned and diversity
    terms lift a memory above one that matches better), while a score is a probability of
    answering; listed as they are, a threshold would drop an item above one it keeps (a listing
    read 0.311, 0.139, 0.170). Pooled, the scores fall along the answer, so the one number an
    item shows is the one `threshold` compares with and the order it is shown in, and the
    order stays the formula's (listing by the raw score instead cost LoCoMo recall_any@5/@10
    0.3/0.7 points: docs/benchmarks.md#scores)."""
    blocks: list[list[float]] = []  # [total, count]
    for score in scores:
        blocks.append([score, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    return [total / count for total, count in blocks for _ in range(int(count))]
