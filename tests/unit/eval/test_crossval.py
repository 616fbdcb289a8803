"""Cross-validated LoCoMo recall (issue 13 item 5): halves, categories, fold gaps."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from streams.eval.crossval import QuestionResults, cross_validate, halves, render_rows


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
    from streams.tools.cli import app

    conv = tmp_path / "conv.json"
    conv.write_text("{}")
    result = CliRunner().invoke(app, ["bench", "locomo", "--offline", "--cross-validate", str(conv)])
    assert result.exit_code == 2
    assert "at least two" in result.output


def test_rows_render_from_a_report_read_back_from_json():
    cv = json.loads(json.dumps(cross_validate(_results(), ["u1", "u2", "u3"])))
    assert ("gap dev B - held-out A", "-0.500", "-0.500", "-0.500", "") in render_rows(cv)
