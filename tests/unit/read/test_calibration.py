"""An item's score is a calibrated probability (streams/read/calibration.py): the same meaning
for every query, user and store size, so a default threshold can keep an off-topic answer out."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from streams.settings import Settings
from benchmarks.score_calibration import Point, reliability
from streams.app.inprocess import InProcessPipeline
from streams.read.calibration import CURVES, FALLBACK, ScoreCurve, curve_for
from tests.unit.read.test_query_execute import ask, ids, index_of, mem
from topics.turns import Turn


def test_the_score_rises_with_relevance_and_each_measured_curve_is_used():
    curve = ScoreCurve(9.0, -8.0)
    assert curve.score(0.2) < curve.score(0.6) < curve.score(0.9) < 1.0
    assert curve.score(-100) == 0.0
    for (profile, mode), measured in CURVES.items():
        assert curve_for(profile, mode) is measured
    assert curve_for("some other model", "hybrid") is FALLBACK


def test_reliability_buckets_compare_the_mean_score_with_the_share_answered():
    points = [Point(0.0, 0.05, False)] * 19 + [Point(0.0, 0.05, True)] + [Point(0.0, 0.95, True)] * 4
    report = reliability(points)
    low, high = report["buckets"]
    assert (low["items"], low["answered"], high["answered"]) == (20, 0.05, 1.0)
    assert report["expected_calibration_error"] == round(4 / 24 * 0.05, 4)


def test_bullets_leave_out_what_scores_under_the_default_threshold_and_full_answers_keep_it():
    index = index_of((mem("on", category="Other"), 0.9), (mem("off", category="Other"), 0.2))
    assert ids(ask(index, top_k=2)) == ["on"], "bullets: QUERY_THRESHOLD (0.02) by default"
    assert ids(ask(index, top_k=2, **{"return": "full"})) == ["on", "off"]
    full = ask(index, top_k=2, **{"return": "full"})[0].items
    assert full[1]["score"] < 0.02 < full[0]["score"] and "rank_score" not in full[1]


async def test_an_off_topic_query_scores_under_the_default_threshold_on_a_small_store(
        tmp_path: Path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path),  # type: ignore[call-arg]
                                 minilm_embedder)
    ts = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
    await pipeline.ingest([
        Turn(user_id="ana", thread_id="t", turn_id=str(n), role="user", speaker="Ana", text=text,  # type: ignore[arg-type]
             ts=ts) for n, text in enumerate(["I adopted a dog named Luna.",
                                              "I pay 900 euros rent every month."])])
    default = Settings().read.query_threshold  # type: ignore[call-arg]
    off_topic = await pipeline.query("ana", "Globex job", 5)
    assert off_topic and all(hit.calibrated < default for hit in off_topic)
    [best, *_] = await pipeline.query("ana", "What pet does Ana have?", 5)
    assert "Luna" in best.memory.summary and best.calibrated > default
