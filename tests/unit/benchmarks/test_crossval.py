"""Cross-validated LoCoMo recall (issue 13 item 5): halves, categories, fold gaps."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.crossval import QuestionResults, cross_validate, halves, render_rows
from tests import defaults


def _hit(ref: str) -> list[tuple[str, list[str]]]:
    return [("text", [f"session_1:{ref}"])]


def _results() -> QuestionResults:
    """u1 and u2 (half A) answer everything; u3 (half B) misses its category-2 question."""
    r = QuestionResults()
    r.add("u1", 1, ["D1:1"], _hit("D1:1"))
    r.add("u2", 2, ["D1:2"], _hit("D1:2"))
    r.add("u3", 1, ["D1:3"], _hit("D1:3"))
    r.add("u3", 2, ["D1:4"], _hit("D9:9"))
    return r


def test_halves_keep_the_order_and_give_the_odd_one_to_the_first():
    assert halves(["a", "b", "c"]) == (["a", "b"], ["c"])
    assert halves(["a", "b", "c", "d", "e", "f"]) == (["a", "b", "c"], ["d", "e", "f"])
    with pytest.raises(ValueError):
        halves(["a"])


def test_recall_per_half_per_category_and_the_fold_gaps():
    cv = cross_validate(_results(), ["u1", "u2", "u3"], ["c1.json", "c2.json", "c3.json"])
    a, b = cv["halves"]["A"], cv["halves"]["B"]
    assert a["conversations"] == ["c1.json", "c2.json"] and b["conversations"] == ["c3.json"]
    assert a["recall_any"][10] == 1.0 and b["recall_any"][10] == 0.5
    assert b["by_category"]["1"]["recall_any"][10] == 1.0
    assert b["by_category"]["2"]["recall_any"][10] == 0.0
    assert cv["categories"]["2"]["recall_any"][10] == 0.5 and cv["categories"]["2"]["questions"] == 2
    gaps = {(f["dev"], f["held_out"]): f["gap_recall_any"][10] for f in cv["folds"]}
    assert gaps == {("A", "B"): 0.5, ("B", "A"): -0.5}
    assert cv["max_gap_at_10"] == 0.5 and cv["within_limit"] is False
    assert ("gap dev A - held-out B", "+0.500", "+0.500", "+0.500", "") in render_rows(cv)
    json.dumps(cv)  # the --json report must serialise


def test_equal_halves_are_within_the_limit():
    r = QuestionResults()
    r.add("u1", 1, ["D1:1"], _hit("D1:1"))
    r.add("u2", 1, ["D1:1"], _hit("D1:1"))
    assert cross_validate(r, ["u1", "u2"])["within_limit"] is True


def test_the_cli_refuses_cross_validation_of_one_conversation(tmp_path):
    from streams.cli.main import app

    conv = tmp_path / "conv.json"
    conv.write_text("{}")
    result = CliRunner().invoke(app, ["bench", "locomo", "--offline", "--cross-validate", str(conv)])
    assert result.exit_code == 2
    assert "at least two" in result.output


def test_rows_render_from_a_report_read_back_from_json():
    cv = json.loads(json.dumps(cross_validate(_results(), ["u1", "u2", "u3"])))
    assert ("gap dev B - held-out A", "-0.500", "-0.500", "-0.500", "") in render_rows(cv)


def _bag_of_words_embed(texts):
    """Deterministic unit vectors from hashed words: enough for BM25 + cosine to rank turns."""
    import zlib

    import numpy as np

    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, zlib.crc32(word.encode()) % 64] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


def test_the_hybrid_baseline_feeds_its_own_cross_validation(tmp_path):
    from types import SimpleNamespace

    from rich.console import Console

    from benchmarks.bench import _cross_validation, baseline_recall
    from streams.tools.locomo import load_conversation

    tiny = Path(__file__).parents[2] / "data" / "locomo_tiny.json"
    files = []
    for name in ("conv-a.json", "conv-b.json"):
        (tmp_path / name).write_text(tiny.read_text())
        files.append(tmp_path / name)
    conversations = [load_conversation(p) for p in files]
    results = QuestionResults()
    _, hybrid = baseline_recall(conversations, SimpleNamespace(embed=_bag_of_words_embed),
                                defaults.retrieval(mode="hybrid"), results)
    scored = sum(len(c.scored_questions) for c in conversations)
    assert len(results.rows) == scored == hybrid.questions
    assert {row[0] for row in results.rows} == {"conv-a", "conv-b"}

    report = _cross_validation(True, results, results, conversations, files)
    cv = report["cross_validation_baseline_hybrid"]
    assert cv["halves"]["A"]["conversations"] == ["conv-a.json"]
    assert cv["max_gap_at_10"] == 0.0  # the same conversation twice: no gap
    assert _cross_validation(False, results, results, conversations, files) == {}

    console = Console(record=True, width=200)
    from benchmarks.bench import render_cross_validation

    render_cross_validation(cv, console, "hybrid raw-turn baseline")
    text = console.export_text()
    assert "hybrid raw-turn baseline: cross-validated recall_any" in text
    assert "half A (conv-a.json)" in text
