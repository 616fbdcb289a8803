"""Golden files of the rules extractor: turn → the facts it writes, exactly.

Each `golden/<sample>.jsonl` line is one turn (`"turn"`, a `topics.turns.Turn`) and the facts
`RulesExtractor().extract` wrote from it (`"facts"`, `topics.candidates.Fact` as JSON), taken
from the extractor of the day the file was made. A change of the language rules that changes
what is written shows here, turn by turn, before any benchmark runs.

The samples (`SAMPLES`): the sentences of tests/data, the chat turns of the scenario cases
(tests/scenarios/cases), LoCoMo turns (three sessions, turns sharing an image, turns naming a
relative date; read from /work/shared/datasets/locomo or `$LOCOMO_DIR` when the files are
remade) and hand-written edge cases (commands, secrets, roles, time zones, captions).

When a change of the rules is meant to change the facts, regenerate and review the diff:

    python -m tests.unit.language.test_golden --update     # same turns, facts written again
    python -m tests.unit.language.test_golden --resample   # turns read again from the sources

(run from the repository root, with the project's Python).
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from streams.write.extraction import RulesExtractor
from topics.turns import Role, Turn

GOLDEN = Path(__file__).parent / "golden"
ROOT = Path(__file__).resolve().parents[3]
SAID = datetime(2023, 5, 8, 12, 0, tzinfo=timezone.utc)


def _turn(text: str, role: Role = Role.user, speaker: str | None = "Ana", i: int = 0,
          ts: datetime = SAID, tz: str | None = None) -> Turn:
    return Turn(user_id="golden", thread_id="t1", turn_id=f"T{i}", role=role,
                speaker=speaker if role == Role.user else None, text=text, ts=ts, timezone=tz)


def _jsonl_texts(name: str) -> Iterator[Turn]:
    lines = (ROOT / "tests/data" / name).read_text("utf-8").splitlines()
    for i, line in enumerate(lines):
        record = json.loads(line)
        yield _turn(record["text"], i=i)


def _scenario_turns() -> Iterator[Turn]:
    i = 0
    for path in sorted((ROOT / "tests/scenarios/cases").glob("*.json")):
        case = json.loads(path.read_text("utf-8"))
        clock = SAID
        for step in case["steps"]:
            if "advance" in step:
                clock += timedelta(**step["advance"])
            for role in ("user", "assistant"):
                if isinstance(step.get(role), str):
                    i += 1
                    clock += timedelta(minutes=1)
                    yield _turn(step[role], Role(role), i=i, ts=clock, tz=case.get("timezone"))


def _locomo_turns() -> Iterator[Turn]:
    from streams.tools.locomo import load_conversation

    folder = Path(os.environ.get("LOCOMO_DIR", "/work/shared/datasets/locomo"))
    first = load_conversation(folder / "conv-26.json").turns
    yield from (t for t in first if t.thread_id in ("session_1", "session_2", "session_3"))
    yield from [t for t in first if "[shares an image:" in t.text][:30]
    dated = ("yesterday", "last ", "ago", "next ", "tomorrow", "this weekend", "tonight")
    for name in ("conv-42.json", "conv-43.json"):
        turns = load_conversation(folder / name).turns
        yield from [t for t in turns if any(w in t.text.lower() for w in dated)][:25]


def _edge_turns() -> Iterator[Turn]:
    texts: list[tuple[str, Role]] = [
        ("Remember that my sister's birthday is on 3 June.", Role.user),
        ("Pin this: I'm allergic to peanuts.", Role.user),
        ("Please don't remember this, I had a rough day at work.", Role.user),
        ("My password is hunter2, don't tell anyone.", Role.user),
        ("We've decided to book the cabin for the last weekend of June.", Role.assistant),
        ("You should try the new ramen place, it's great.", Role.assistant),
        ("The tool returned 3 results.", Role.tool),
        ("I adopted a dog named Luna last year. She is 3 now.", Role.user),
        ("My son Max is 7 and loves soccer.", Role.user),
        ("My kids Max and Lily are twins. They love the beach.", Role.user),
        ("I moved to Lisbon two weeks ago and I'm living in Alfama.", Role.user),
        ("Last Sunday was awesome, we hiked Fox Hollow!", Role.user),
        ("We're hiking on Saturday. We hiked on Saturday.", Role.user),
        ("I'm thinking of running a marathon next month.", Role.user),
        ("Haha yeah, thanks so much! Talk soon.", Role.user),
        ("Here's Toby at his favorite spot. [shares an image: a photo of a dog on a beach]", Role.user),
        ("Look! [shares an image: a photography of a car on a flatbed]", Role.user),
        ("[shares an image: a painting of a sunset over a lake]", Role.user),
        ("I painted it last winter and sold it a few weeks ago for $300.", Role.user),
        ("Been reading that book you recommended, loving it so far.", Role.user),
        ("Mel, that sounds amazing! I went to a pottery class yesterday.", Role.user),
        ("My name is Sam and my pronouns are they/them.", Role.user),
        ("I'm 34 years old and I work as a nurse at St. Mary's.", Role.user),
        ("First, preheat the oven. Then bake the cobbler for 40 minutes.", Role.user),
        ("First I soak the beans overnight, then I cook them for two hours.", Role.user),
        ("Fox Hollow is a great trail to hike on weekends.", Role.user),
    ]
    for i, (text, role) in enumerate(texts):
        yield _turn(text, role, i=i)
    yield _turn("I went to the market yesterday.", i=len(texts),
                ts=datetime(2023, 5, 8, 2, 0, tzinfo=timezone.utc), tz="America/Los_Angeles")


SAMPLES: dict[str, Callable[[], Iterator[Turn]]] = {
    "benign_sentences": lambda: _jsonl_texts("benign_sentences.jsonl"),
    "importance_labels": lambda: _jsonl_texts("importance_labels.jsonl"),
    "secrets_corpus": lambda: _jsonl_texts("secrets_corpus.jsonl"),
    "scenarios": _scenario_turns,
    "locomo": _locomo_turns,
    "edge_cases": _edge_turns,
}
"""Where each golden file's turns come from (read again with `--resample`)."""


def _facts(turn: Turn) -> list[dict[str, Any]]:
    return [fact.model_dump(mode="json") for fact in RulesExtractor().extract(turn)]


def _read(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (GOLDEN / f"{name}.jsonl").read_text("utf-8").splitlines()]


def _write(name: str, turns: list[Turn]) -> None:
    GOLDEN.mkdir(exist_ok=True)
    lines = [json.dumps({"turn": t.model_dump(mode="json", exclude_defaults=True), "facts": _facts(t)},
                        ensure_ascii=False, sort_keys=True) for t in turns]
    (GOLDEN / f"{name}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_extractor_writes_the_golden_facts(name: str) -> None:
    records = _read(name)
    assert records, name
    wrong = []
    for i, record in enumerate(records):
        turn = Turn.model_validate(record["turn"])
        if (got := _facts(turn)) != record["facts"]:
            wrong.append(f"{name}.jsonl:{i + 1} {turn.text[:80]!r}\n  want {record['facts']}\n  got  {got}")
    assert not wrong, f"{len(wrong)} of {len(records)} turns differ:\n" + "\n".join(wrong[:5])


def test_golden_files_hold_facts_of_every_kind() -> None:
    """The sample is varied: facts of each memory type, notes, shared photos, explicit ones,
    dated ones, and turns that write nothing."""
    records = [r for name in SAMPLES for r in _read(name)]
    facts = [f for r in records for f in r["facts"]]
    assert {f["type"] for f in facts} == {"semantic", "episodic", "procedural"}
    for tag in ("note", "image", "explicit"):
        assert any(tag in f["tags"] for f in facts), tag
    assert any(f["event_start"] for f in facts) and any(f["entity_key"] for f in facts)
    assert sum(not r["facts"] for r in records) >= 50


def main(argv: list[str]) -> None:
    """`--update`: the stored turns' facts written again; `--resample`: the turns read again
    from their sources (`SAMPLES`), then their facts written."""
    if argv not in (["--update"], ["--resample"]):
        raise SystemExit(__doc__)
    for name, sample in SAMPLES.items():
        turns = (list(sample()) if argv == ["--resample"]
                 else [Turn.model_validate(r["turn"]) for r in _read(name)])
        _write(name, turns)
        print(f"{GOLDEN / name}.jsonl: {len(turns)} turns")


if __name__ == "__main__":
    main(sys.argv[1:])
