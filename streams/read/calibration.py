"""The `score` of a query item: the probability that it answers the query (issue 25).

The ranking score (`streams.read.ranking`) orders one answer's candidates; it is scaled over the
candidate pool, so 0.85 for the best of a bad pool and 0.85 for the best of a good one say
nothing alike, and no threshold means the same across users or queries. An item's `score` is
instead a calibrated probability: a logistic curve of its relevance (the cosine in dense
retrieval, the fused dense + BM25 relevance in hybrid: `streams.read.fusion`), fitted per
embedder and retrieval mode on the LoCoMo development questions, where an item "answers" when
its provenance holds an evidence turn (`python -m benchmarks.score_calibration`). It does
not depend on the pool, the ranking weights or the item's rank, so `threshold` (and
`QUERY_THRESHOLD`, which bullets honour by default) means the same for every query.

The curves are the embedder's cosine scale: a model with no measured curve gets the default
model's (`FALLBACK`), which is only as right as the two models' scales agree.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ScoreCurve:
    """`score = 1 / (1 + exp(-(slope · relevance + intercept)))`."""

    slope: float
    intercept: float

    def score(self, relevance: float) -> float:
        """The probability that an item of this relevance answers the query."""
        z = self.slope * relevance + self.intercept
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


CURVES: dict[tuple[str, str], ScoreCurve] = {
    # The six LoCoMo development conversations, the defaults (lifecycle on, memories searched
    # with their context vectors, `streams.write.contextual`), top 20 per question: expected
    # calibration error 0.008-0.009 (0.005-0.011 fitted on one half, measured on the other)
    # with each curve. Refitted when context vectors came: the old curves served them at
    # 0.015-0.022.
    ("all-MiniLM-L6-v2 onnx-int8", "hybrid"): ScoreCurve(8.45, -7.32),
    ("all-MiniLM-L6-v2 onnx-int8", "dense"): ScoreCurve(9.66, -8.49),
    ("all-MiniLM-L6-v2 onnx", "hybrid"): ScoreCurve(8.28, -7.22),
    ("all-MiniLM-L6-v2 onnx", "dense"): ScoreCurve(9.42, -8.35),
}
"""(embedder profile name, retrieval mode) -> its curve, as `score_calibration` printed it."""
FALLBACK = CURVES[("all-MiniLM-L6-v2 onnx-int8", "hybrid")]


def curve_for(profile: str, mode: str) -> ScoreCurve:
    """The measured curve of this embedder and retrieval mode, else `FALLBACK`."""
    return CURVES.get((profile, mode), FALLBACK)
