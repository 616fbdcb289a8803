"""Gold observations of LoCoMo and precision against them (fake embedder: no model)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.gold import (
    DEFAULT_THRESHOLD,
    best_similarities,
    evidence_ids,
    extraction_report,
    gold_texts,
    load_observations,
    parse_observations,
    precision_against_gold,
    precision_curve,
)

CONV = {
    "speaker_a": "Caroline", "speaker_b": "Melanie",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group yesterday."},
        {"speaker": "Melanie", "dia_id": "D1:2", "text": "Wow! I painted a lake sunrise last year!"},
        {"speaker": "Melanie", "dia_id": "D1:3", "text": "ok"},
    ],
    "session_2_date_time": "1:14 pm on 25 May, 2023",
    "session_2": [
        {"speaker": "Caroline", "dia_id": "D2:1", "text": "I adopted a cat named Miso."},
    ],
    "session_1_observation": {
        "Caroline": [["Caroline attended a support group.", "D1:1"]],
        "Melanie": [["Melanie painted a lake sunrise in 2022.", ["D1:2"]],
                    ["Melanie likes painting.", "D1:2, D1:4"],
                    ["bad item"], [], ["", "D1:9"]],
    },
    "session_2_observation": {"Caroline": [["Caroline adopted a cat named Miso.", "D2:1"]]},
    "session_2_summary": "not an observation",
    "qa": [],
}


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "conv-x.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_parse_observations_formats() -> None:
    obs = parse_observations(CONV)
    assert [o.text for o in obs] == [
        "Caroline attended a support group.", "Melanie painted a lake sunrise in 2022.",
        "Melanie likes painting.", "Caroline adopted a cat named Miso."]
    assert [o.session for o in obs] == [1, 1, 1, 2]
    assert obs[0].speaker == "Caroline" and obs[0].evidence == ("D1:1",)
    assert obs[1].evidence == ("D1:2",)
    assert obs[2].evidence == ("D1:2", "D1:4")  # "D1:2, D1:4" in one string
    assert evidence_ids(obs) == {"D1:1", "D1:2", "D1:4", "D2:1"}


def test_original_locomo10_layout() -> None:
    sample = {"conversation": {k: v for k, v in CONV.items() if "observation" not in k},
              "observation": {k: v for k, v in CONV.items() if k.endswith("_observation")}}
    assert [o.text for o in parse_observations(sample)] == [o.text for o in parse_observations(CONV)]


def test_load_from_file(tmp_path: Path) -> None:
    path = write(tmp_path, CONV)
    assert len(load_observations(path)) == 4
    assert gold_texts(path)[0] == "Caroline attended a support group."
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError):
        load_observations(bad)


def fake_embed(texts: list[str]) -> np.ndarray:
    """Bag of lower-case words hashed into 64 dims, L2-normalised: shared words → similar."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.lower().replace(".", " ").split():
            out[i, sum(map(ord, word)) % 64] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


def test_precision_against_gold() -> None:
    gold = ["Caroline attended a support group.", "Melanie painted a lake sunrise in 2022."]
    memories = ["Caroline attended a support group.",        # identical: 1.0
                "Melanie painted a lake sunrise in 2022.",   # identical: 1.0
                "Zed bought quantum widgets."]                # nothing in common
    assert precision_against_gold(memories, gold, fake_embed, 0.9) == pytest.approx(2 / 3)
    sims = best_similarities(memories, gold, fake_embed)
    assert sims[0] == pytest.approx(1.0) and sims[2] < 0.5
    assert precision_against_gold([], gold, fake_embed) == 0.0
    assert precision_against_gold(memories, [], fake_embed) == 0.0
    curve = precision_curve(memories, gold, fake_embed, (0.0, 0.9, 1.01))
    assert curve == {0.0: 1.0, 0.9: pytest.approx(2 / 3), 1.01: 0.0}
    assert 0.5 < DEFAULT_THRESHOLD < 0.9


def test_extraction_report(tmp_path: Path) -> None:
    path = write(tmp_path, CONV)
    report = extraction_report([path], fake_embed, thresholds=(0.0, 0.99))
    assert report["turns"] == 4 and report["facts"] >= 3
    assert report["writing_pass_rate"] == 1.0
    assert report["writer_stats"]["drafted"] >= report["facts"] - 1
    assert report["precision_against_gold"]["0.0"] == 1.0
    assert 0.0 <= report["precision_against_gold"]["0.99"] <= 1.0


def test_stored_quality_of_the_bench(tmp_path: Path) -> None:
    """The bench reports the writing pass rate and precision of the *stored* memories; a file
    without gold observations is left out of precision instead of counting as misses."""
    from types import SimpleNamespace

    from benchmarks.bench import stored_quality
    from streams.tools.locomo import load_conversation

    with_gold = write(tmp_path, CONV)
    bare = tmp_path / "no-gold.json"
    bare.write_text(json.dumps({k: v for k, v in CONV.items() if "observation" not in k}))
    convs = [load_conversation(with_gold), load_conversation(bare)]
    assert convs[0].user_id != convs[1].user_id
    summaries = {
        (convs[0].user_id, "semantic"): ["Caroline attended a support group.",  # matches gold
                                         "Zed bought quantum widgets."],        # matches nothing
        (convs[0].user_id, "episodic"): ["lowercase and no period"],            # fails writing
        (convs[1].user_id, "semantic"): ["Zed bought quantum widgets."],        # no gold: ignored
    }
    report = stored_quality(summaries, convs, [with_gold, bare], SimpleNamespace(embed=fake_embed))
    assert report["writing_pass_rate"] == pytest.approx(3 / 4)
    assert report["precision_against_gold"]["0.8"] == pytest.approx(1 / 3, abs=1e-4)
    assert stored_quality(summaries, convs[1:], [bare], SimpleNamespace(embed=fake_embed))[
        "precision_against_gold"] is None
