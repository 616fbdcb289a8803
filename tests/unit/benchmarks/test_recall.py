"""Provenance recall metric and the raw-turn cosine baseline."""
from __future__ import annotations

import zlib
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from streams.tools.locomo import load_conversation
from benchmarks.recall import RawTurnBaseline, RecallReport, dia_id_of, score_question
from topics.turns import Turn

TINY = Path(__file__).parents[2] / "data" / "locomo_tiny.json"


def test_dia_id_of_splits_on_first_colon():
    assert dia_id_of("session_1:D1:3") == "D1:3"
    assert dia_id_of("thread-x:D10:2") == "D10:2"
    assert dia_id_of("D1") == "D1"


def test_score_question_any_vs_all():
    ranked = [["session_1:D1:1"], ["session_1:D1:2", "session_2:D2:5"], ["session_1:D1:3"]]
    assert score_question(["D1:2", "D2:5"], ranked, 2) == (True, True)
    assert score_question(["D1:2", "D1:3"], ranked, 2) == (True, False)
    assert score_question(["D1:2", "D1:3"], ranked, 3) == (True, True)
    assert score_question(["D1:3"], ranked, 1) == (False, False)
    assert score_question([], ranked, 3) == (False, False)
    assert score_question(["D1:1"], [], 5) == (False, False)


def test_recall_report():
    report = RecallReport()
    hit_first = [("one two", ["s1:D1:1"])] + [("x", ["s1:D1:9"])] * 24
    report.add(["D1:1", "D1:7"], hit_first)  # any at every k, never all
    late = [("a b c", [f"s1:D1:{i + 100}"]) for i in range(7)] + [("late", ["s1:D1:7"])]
    report.add(["D1:7"], late)  # hit at rank 8: k=10 and 20, not 5
    d = report.as_dict()
    assert d["questions"] == 2
    assert d["recall_any"] == {5: 0.5, 10: 1.0, 20: 1.0}
    assert d["recall_all"] == {5: 0.0, 10: 0.5, 20: 0.5}
    # q1: 2 + (k-1) words; q2: 3 words per item, 1 for "late", at most 8 items.
    assert d["context_words_mean_at"] == {5: (6 + 15) / 2, 10: (11 + 22) / 2, 20: (21 + 22) / 2}
    assert d["context_words_mean"] == d["context_words_mean_at"][10]


def test_empty_report():
    d = RecallReport().as_dict()
    assert d["questions"] == 0 and d["recall_any"] == {5: 0.0, 10: 0.0, 20: 0.0}


def fake_embed(texts: list[str]) -> np.ndarray:
    """Deterministic bag-of-words hashing embedder, L2-normalised rows."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().replace(":", " ").replace("?", " ").replace("!", " ").split():
            out[row, zlib.crc32(word.encode()) % 64] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


def test_baseline_search_tiny():
    conv = load_conversation(TINY)
    baseline = RawTurnBaseline(fake_embed)
    baseline.index(conv.turns)
    results = baseline.search(conv.user_id, fake_embed(["pottery classes"])[0], k=2)
    assert len(results) == 2
    text, refs = results[0]
    assert text == "Ana: I started pottery classes last week."
    assert refs == ["session_9:D9:1"]
    assert baseline.search("someone-else", fake_embed(["pottery"])[0], 3) == []
    assert len(baseline.search(conv.user_id, fake_embed(["x"])[0], 50)) == 6


def test_baseline_is_per_user_and_feeds_report():
    ts = datetime(2024, 1, 1, tzinfo=timezone.utc)
    turns = [
        Turn(user_id=u, thread_id="s1", turn_id=f"D1:{i}", role="user", speaker="Zoe", text=t, ts=ts)
        for u, i, t in [("u1", 1, "red bicycle"), ("u1", 2, "green tea"), ("u2", 1, "red bicycle")]
    ]
    baseline = RawTurnBaseline(fake_embed)
    baseline.index(turns[:2])
    baseline.index(turns[2:])
    query = fake_embed(["green tea"])[0]
    assert [r[1] for r in baseline.search("u1", query, 5)][0] == ["s1:D1:2"]
    assert [r[1] for r in baseline.search("u2", query, 5)] == [["s1:D1:1"]]
    report = RecallReport()
    report.add(["D1:2"], baseline.search("u1", query, 20))
    assert report.as_dict()["recall_any"][5] == pytest.approx(1.0)


def test_duplicate_rate_counts_memories_with_a_near_twin():
    import numpy as np

    from benchmarks.recall import duplicate_rate

    a = np.array([[1.0, 0.0], [0.999, 0.0447], [0.0, 1.0]], dtype=np.float32)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    assert duplicate_rate({"u": a}, 0.9) == 2 / 3
    assert duplicate_rate({"u": a[[0, 2]]}, 0.9) == 0.0
