"""Golden turns of the rules extractor: each turn and the facts a person expects from it.

Each `golden/<sample>.jsonl` line is one turn (`"turn"`, a `topics.turns.Turn`) and the facts a
correct extractor writes from it (`"facts"`, `[type, summary]` pairs, in turn order), each read
and corrected by hand (2026-12-02): they are not regenerated from the extractor's output, so a
change of the rules that changes a fact fails here until a person has read the new fact and
edited the file. A line with `"known_gap"` holds the fact as it should be and why the extractor
does not write it yet; it is expected to fail (strictly: once the extractor gets it right, the
mark must go).

The samples: `edge_cases` (commands, secrets, roles, captions, time zones, procedures) and
`benign_sentences` (the sentences of tests/data/benign_sentences.jsonl). The files that pinned
every field of every fact of LoCoMo, scenario and importance turns as the extractor of the day
wrote them were retired: what those turns should give is measured on labelled truth instead
(`memstream bench details`, `bench locomo`, the scenario suite, `benchmarks.importance_report`).

`python -m tests.unit.language.test_golden` prints every turn whose facts differ, for review;
it writes nothing.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from streams.write.extraction import RulesExtractor
from topics.turns import Turn

GOLDEN = Path(__file__).parent / "golden"
SAMPLES = ("benign_sentences", "edge_cases")


def _read(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (GOLDEN / f"{name}.jsonl").read_text("utf-8").splitlines()]


def _written(turn: Turn) -> list[list[str]]:
    return [[fact.type, fact.summary] for fact in RulesExtractor().extract(turn)]


def _cases() -> list[Any]:
    return [pytest.param(r, id=f"{name}:{i + 1}",
                         marks=[pytest.mark.xfail(reason=r["known_gap"], strict=True)]
                         if "known_gap" in r else [])
            for name in SAMPLES for i, r in enumerate(_read(name))]


@pytest.mark.parametrize("record", _cases())
def test_extractor_writes_the_reviewed_facts(record: dict[str, Any]) -> None:
    assert _written(Turn.model_validate(record["turn"])) == record["facts"]


def test_golden_turns_are_varied() -> None:
    """Facts of each memory type, turns that write nothing, and more than one speaker role."""
    records = [r for name in SAMPLES for r in _read(name)]
    assert {kind for r in records for kind, _ in r["facts"]} == {"semantic", "episodic", "procedural"}
    assert sum(not r["facts"] for r in records) >= 8
    assert {r["turn"]["role"] for r in records} >= {"user", "assistant", "tool"}


def main() -> None:
    """Print the turns whose facts differ from the reviewed ones (nothing is written)."""
    for name in SAMPLES:
        for i, record in enumerate(_read(name)):
            got = _written(Turn.model_validate(record["turn"]))
            if got != record["facts"]:
                print(f"{name}.jsonl:{i + 1} {record['turn']['text']!r}\n  want {record['facts']}"
                      f"\n  got  {got}")


if __name__ == "__main__":
    main() if len(sys.argv) == 1 else sys.exit(__doc__)
