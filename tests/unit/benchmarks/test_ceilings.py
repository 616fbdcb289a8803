"""`bench ceilings` (benchmarks/ceilings.py): the oracle order and the oracle parts it asks with."""
from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone

from rich.console import Console

from benchmarks.ceilings import Rows, oracle_order, render
from benchmarks.combining import default_pipeline
from topics.turns import Role, Turn


def test_the_fewest_items_that_hold_all_the_evidence_come_first_the_rest_in_their_order() -> None:
    items = [("a", ["s:D1:1"]), ("b", ["s:D2:1"]), ("c", ["s:D3:1", "s:D2:1"]), ("d", ["s:D4:1"])]
    ordered = oracle_order(["D2:1", "D3:1", "D4:1"], items)
    assert [text for text, _ in ordered] == ["c", "d", "a", "b"]


def test_an_answer_without_the_evidence_keeps_its_order() -> None:
    items = [("a", ["s:D1:1"]), ("b", ["s:D2:1"])]
    assert oracle_order(["D9:9"], items) == items


def test_the_report_renders_from_its_json_in_a_terminal_of_80_columns() -> None:
    rows = Rows()
    for row in ("defaults", "oracle parts", "oracle order", "lifecycle off"):
        rows.add(row, 1, ["D1:1"], [("a", ["s:D1:1"])])
    report = {"files": ["x.json"], "questions": 1, "pool": 100, "rows": rows.summary(),
              "evidence_stored": {"active": 1.0, "active_or_archived": 1.0}}
    console = Console(record=True, width=80)
    render(json.loads(json.dumps(report)), console)
    text = console.export_text()
    assert "1.000" in text and "lifecycle off" in text and "words@10" in text
    assert "…" not in text  # no column cut short


def test_the_parts_given_to_a_query_are_searched_for_its_answer() -> None:
    """`InProcessPipeline.query(parts=…)`, what the oracle row asks with: a part names a memory
    the question itself does not find."""
    said = ["I adopted a cat named Miso last spring.", "My sister Ana lives in Lisbon now.",
            "I started learning the cello in January.",
            "I run five kilometres every morning before work."]
    start = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    turns = [Turn(user_id="u1", thread_id="t1", turn_id=f"d{i}", role=Role.user, speaker="Maya",
                  text=text, ts=start + timedelta(minutes=i)) for i, text in enumerate(said)]
    pipeline = default_pipeline()

    async def ask() -> tuple[list[str], list[str]]:
        await pipeline.ingest(turns)
        question = "Where does Maya's sister live?"
        plain = await pipeline.query("u1", question, 2)
        given = await pipeline.query("u1", question, 2, parts=[said[2]])
        return ([r for h in plain for r in h.memory.source_turn_ids],
                [r for h in given for r in h.memory.source_turn_ids])

    plain, given = asyncio.run(ask())
    assert "t1:d2" not in plain
    assert "t1:d2" in given
