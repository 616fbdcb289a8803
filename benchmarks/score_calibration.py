"""How well an item's `score` says whether it answers the query, and the curve behind it.

`bench locomo` reports the reliability of the scores it was served: the questions' items in
buckets of score, each bucket's mean score beside the share of its items that hold an evidence
turn (a calibrated score matches the two), the expected calibration error, and, with `--plot`,
the reliability diagram as PNG. This module's command fits the curve (`streams.read.calibration`)
for the settings' embedder and retrieval mode on LoCoMo files, replayed in process with the
defaults, and checks it across the two halves of the files (fit on one, measure on the other):

    python -m benchmarks.score_calibration ../shared/datasets/locomo/conv-*.json [--plot FILE]
"""
from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from streams.read.calibration import ScoreCurve

BUCKETS = 10


@dataclass(frozen=True)
class Point:
    """One served item: its relevance, its score and whether it answered (held evidence)."""

    relevance: float
    score: float
    answered: bool
    group: int = 0
    """Which half of the files it came from (for the cross-check)."""
    rank: float = 0.0
    """Its ranking score as served (a marginal one under diversity)."""


def answered(evidence: Sequence[str], refs: Sequence[str]) -> bool:
    """Whether an item with provenance `refs` holds one of a question's evidence turns."""
    from benchmarks.recall import dia_id_of

    return bool({dia_id_of(ref) for ref in refs} & set(evidence))


def reliability(points: Sequence[Point], buckets: int = BUCKETS) -> dict[str, Any]:
    """Per bucket of score [i/b, (i+1)/b): items, mean score, share answered; and the expected
    calibration error (the items' weighted mean gap between the two)."""
    rows, error = [], 0.0
    scores = np.array([p.score for p in points])
    answered = np.array([p.answered for p in points], dtype=float)
    for i in range(buckets):
        low, high = i / buckets, (i + 1) / buckets
        mask = (scores >= low) & ((scores < high) if i < buckets - 1 else (scores <= high))
        if not mask.any():
            continue
        mean, rate = float(scores[mask].mean()), float(answered[mask].mean())
        rows.append({"from": low, "to": high, "items": int(mask.sum()),
                     "mean_score": round(mean, 4), "answered": round(rate, 4)})
        error += mask.mean() * abs(mean - rate)
    return {"buckets": rows, "expected_calibration_error": round(float(error), 4),
            "items": len(points)}


def fit(points: Sequence[Point]) -> ScoreCurve:
    """The logistic curve of `answered` on `relevance` and the ranking score (scikit-learn,
    barely regularised). Both: relevance alone says how well an item matches but not whether
    it is the best of the user's memories (a 0.4 is the answer in a store of ten and noise in
    one of a thousand); the ranking score says where it stands among the candidates and what
    importance, recency and pinning add."""
    from sklearn.linear_model import LogisticRegression

    x = np.array([[p.relevance, p.rank] for p in points])
    y = np.array([p.answered for p in points])
    model = LogisticRegression(C=100.0).fit(x, y)
    return ScoreCurve(round(float(model.coef_[0][0]), 2), round(float(model.intercept_[0]), 2),
                      round(float(model.coef_[0][1]), 2))


def rescored(points: Sequence[Point], curve: ScoreCurve) -> list[Point]:
    return [Point(p.relevance, curve.score(p.relevance, p.rank), p.answered, p.group, p.rank)
            for p in points]


def plot(report: dict[str, Any], path: Path, title: str) -> Path:
    """The reliability diagram of a `reliability` report, as PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["buckets"]
    figure, axes = plt.subplots(figsize=(5.5, 5))
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", label="calibrated")
    axes.plot([r["mean_score"] for r in rows], [r["answered"] for r in rows], marker="o",
              label=f"served items (ECE {report['expected_calibration_error']:.3f})")
    for r in rows:
        axes.annotate(str(r["items"]), (r["mean_score"], r["answered"]), fontsize=7,
                      textcoords="offset points", xytext=(4, -10))
    axes.set_xlabel("score (mean in bucket)")
    axes.set_ylabel("share of items holding an evidence turn")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.set_title(title, fontsize=10)
    axes.legend(loc="upper left")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


async def _points(files: Sequence[Path]) -> tuple[list[Point], str, str]:
    """Every item served to every scored question of `files`, replayed in process with the
    settings' defaults (top 20, full mode)."""
    from streams.app.services import settings_embedder
    from streams.settings import get_settings
    from streams.tools.locomo import load_conversation
    from streams.app.inprocess import InProcessPipeline

    settings = get_settings()
    embedder = settings_embedder(settings)
    conversations = [load_conversation(p) for p in files]
    pipeline = InProcessPipeline(settings, embedder)
    await pipeline.ingest([t for c in conversations for t in c.turns])
    half = (len(conversations) + 1) // 2
    points = []
    for n, conv in enumerate(conversations):
        for question in conv.scored_questions:
            for hit in await pipeline.query(conv.user_id, question.question, 20):
                points.append(Point(hit.relevance if hit.relevance is not None else hit.similarity,
                                    hit.calibrated,
                                    answered(question.evidence, hit.memory.source_turn_ids),
                                    int(n >= half), hit.score))
    return points, embedder.profile.name, settings.read.retrieval_mode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="LoCoMo conversation files")
    parser.add_argument("--plot", type=Path, help="write the reliability diagram (PNG) here")
    args = parser.parse_args()
    points, profile, mode = asyncio.run(_points(args.files))
    curve = fit(points)
    halves = [[p for p in points if p.group == g] for g in (0, 1)]
    cross = {f"fit on half {'AB'[g]}, measured on half {'BA'[g]}":
             reliability(rescored(halves[1 - g], fit(halves[g])))["expected_calibration_error"]
             for g in (0, 1)}
    report = {"embedder": profile, "retrieval": mode, "curve": asdict(curve),
              "served_now": reliability(points), "refitted": reliability(rescored(points, curve)),
              "cross_halves_ece": cross}
    print(json.dumps(report, indent=2))
    if args.plot:
        plot(report["served_now"], args.plot, f"{profile}, {mode} retrieval")


if __name__ == "__main__":
    main()
