"""LoCoMo loader: ordering, times, evidence normalisation, scored questions."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from streams.tools.locomo import (
    load_conversation,
    load_turns_jsonl,
    normalise_evidence,
    user_id_from_path,
)

TINY = Path(__file__).parents[2] / "data" / "locomo_tiny.json"
CONV_26 = Path(__file__).resolve().parents[4] / "shared" / "datasets" / "locomo" / "conv-26.json"


@pytest.fixture(scope="module")
def tiny():
    return load_conversation(TINY)


def test_tiny_structure(tiny):
    assert tiny.user_id == "locomo_tiny"
    assert tiny.speakers == ("Ana", "Ben")
    assert len(tiny.turns) == 6 and tiny.skipped_turns == 0
    assert {t.user_id for t in tiny.turns} == {"locomo_tiny"}
    assert all(t.role.value == "user" and t.source == "chat" for t in tiny.turns)
    first = tiny.turns[0]
    assert (first.thread_id, first.turn_id, first.speaker) == ("session_9", "D9:1", "Ana")
    assert first.ref == "session_9:D9:1"


def test_sessions_sorted_numerically(tiny):
    # session_10 precedes session_9 in the file and lexically; numerically it comes after.
    assert [t.thread_id for t in tiny.turns] == ["session_9"] * 3 + ["session_10"] * 3
    assert [t.turn_id for t in tiny.turns] == ["D9:1", "D9:2", "D9:3", "D10:1", "D10:2", "D10:3"]


def test_ts_aware_utc_and_increasing(tiny):
    ts = [t.ts for t in tiny.turns]
    assert all(x.tzinfo is not None and x.utcoffset() == timedelta(0) for x in ts)
    assert ts[0] == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert ts[1] - ts[0] == timedelta(seconds=30)
    assert ts[3] == datetime(2023, 6, 3, 9, 15, tzinfo=timezone.utc)
    assert all(a < b for a, b in zip(ts, ts[1:]))


def test_image_caption_appended(tiny):
    assert tiny.turns[-1].text == "A beagle, look at him. [shares an image: a photo of a beagle puppy on a rug]"
    assert "shares an image" not in tiny.turns[0].text


def test_questions_and_scored(tiny):
    assert len(tiny.questions) == 3
    messy = tiny.questions[1]
    assert messy.evidence == ("D9:2", "D10:3") and messy.category == 1
    adversarial = tiny.questions[2]
    assert adversarial.category == 5 and adversarial.answer is None
    assert [q.question for q in tiny.scored_questions] == [
        "What class did Ana start?",
        "What are Ben's plans and Ana's new pet?",
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D1:3; D1:4"], ("D1:3", "D1:4")),
        (["d1:3", "D10:2 "], ("D1:3", "D10:2")),
        (["D8:6,D9:17 D9:17"], ("D8:6", "D9:17")),
        (["D:11:26", "D", ""], ("D11:26",)),
        ("D2:1", ("D2:1",)),
        (None, ()),
    ],
)
def test_normalise_evidence(raw, expected):
    assert normalise_evidence(raw) == expected


def test_evidence_without_ids_is_not_scored(tmp_path):
    data = json.loads(TINY.read_text())
    data["qa"][0]["evidence"] = ["D"]
    path = tmp_path / "conv-x.json"
    path.write_text(json.dumps(data))
    conv = load_conversation(path)
    assert conv.questions[0].evidence == ()
    assert len(conv.scored_questions) == 1


def test_malformed_turns_skipped_and_counted(tmp_path):
    data = json.loads(TINY.read_text())
    data["session_9"].insert(1, {"speaker": "Ben", "dia_id": "D9:9"})  # no text
    data["session_9"].append({"speaker": "Ben", "text": "no id"})
    data["session_10"].append("not a turn")
    path = tmp_path / "conv 7.json"
    path.write_text(json.dumps(data))
    conv = load_conversation(path)
    assert conv.user_id == "conv_7"
    assert conv.skipped_turns == 3
    assert len(conv.turns) == 6


def test_original_layout_with_conversation_key(tmp_path):
    data = json.loads(TINY.read_text())
    qa = data.pop("qa")
    path = tmp_path / "sample.json"
    path.write_text(json.dumps({"sample_id": "ignored", "conversation": data, "qa": qa}))
    conv = load_conversation(path)
    assert conv.user_id == "sample" and len(conv.turns) == 6 and len(conv.questions) == 3


def test_user_id_sanitised():
    assert user_id_from_path(Path("/x/conv-26.json")) == "conv-26"
    assert user_id_from_path(Path("my conv\t1.json")) == "my_conv_1"


def test_load_turns_jsonl(tmp_path):
    path = tmp_path / "turns.jsonl"
    path.write_text('{"turn_id": "a"}\n\n  \n{"turn_id": "b"}\n')
    assert [r["turn_id"] for r in load_turns_jsonl(path)] == ["a", "b"]
    path.write_text('{"turn_id": "a"}\nnot json\n')
    with pytest.raises(ValueError, match=":2:"):
        list(load_turns_jsonl(path))


@pytest.mark.skipif(not CONV_26.exists(), reason="LoCoMo data not available")
def test_conv_26():
    conv = load_conversation(CONV_26)
    assert conv.user_id == "conv-26"
    assert conv.skipped_turns == 0 and len(conv.turns) == 419
    threads = list(dict.fromkeys(t.thread_id for t in conv.turns))
    assert threads == [f"session_{i}" for i in range(1, 20)]
    assert all(a.ts < b.ts for a, b in zip(conv.turns, conv.turns[1:]))
    assert all(t.ts.tzinfo is not None for t in conv.turns)
    turn_ids = {t.turn_id for t in conv.turns}
    scored = conv.scored_questions
    assert scored and all(q.category in (1, 2, 3, 4) for q in scored)
    evidence = [e for q in scored for e in q.evidence]
    assert sum(e in turn_ids for e in evidence) / len(evidence) > 0.98
    # The messy entry "D8:6; D9:17" is split into two ids.
    assert any(q.evidence[:2] == ("D8:6", "D9:17") for q in conv.questions)
