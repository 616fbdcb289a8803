"""`bench locomo` measures the product as shipped (issue 20): the lifecycle on unless
--no-lifecycle, and a replay that reads memory before every turn as a chat backend does."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from benchmarks.live_chat import end_state, live_replay, per_conversation
from benchmarks.crossval import QuestionResults
from streams.tools.locomo import load_conversation
from streams.memory.model import Memory

TINY = Path(__file__).resolve().parents[2] / "data" / "locomo_tiny.json"


def test_the_bench_runs_with_the_lifecycle_unless_told_not_to(monkeypatch):
    from streams.cli import bench, main

    seen: dict[str, object] = {}

    def fake(files, console, **options):  # type: ignore[no-untyped-def]
        seen.update(options)
        return {}

    monkeypatch.setattr("benchmarks.bench.run_offline_bench", fake)
    monkeypatch.setattr(bench, "_show", lambda *a: None)
    CliRunner().invoke(main.app, ["bench", "locomo", "--offline", str(TINY)])
    assert seen["lifecycle"] is True and seen["live_queries"] is False
    CliRunner().invoke(main.app, ["bench", "locomo", "--offline", "--no-lifecycle", "--live-queries",
                                 str(TINY)])
    assert seen["lifecycle"] is False and seen["live_queries"] is True


async def test_a_live_replay_reads_before_every_turn_in_order():
    turns = load_conversation(TINY).turns
    log: list[tuple[str, str]] = []

    async def ask(turn):  # type: ignore[no-untyped-def]
        log.append(("read", turn.turn_id))

    async def send(turn):  # type: ignore[no-untyped-def]
        log.append(("send", turn.turn_id))

    assert await live_replay(turns, ask, send) == len(turns)
    assert log == [(what, t.turn_id) for t in turns for what in ("read", "send")]


def test_the_end_state_counts_states_and_measures_each_users_index(minilm_embedder):
    from datetime import datetime, timezone

    from streams.memory.vector_index import encode_vector

    now = datetime(2024, 5, 1, tzinfo=timezone.utc)
    vector = encode_vector(minilm_embedder.embed(["Ana plays the cello."])[0])
    memories = [Memory(id=f"m{i}", user_id="u", type="semantic", summary=f"Ana fact {i}.",
                       state=state, created_at=now, updated_at=now, last_accessed=now,
                       embedding_b64=vector)
                for i, state in enumerate(["active", "active", "archived"])]
    report = end_state({"u": memories}, {"u": "conv.json"}, minilm_embedder.profile.dim)
    user = report["per_user"]["conv.json"]
    assert user["by_state"] == {"active": 2, "archived": 1}
    assert user["index_bytes"] > 3 * minilm_embedder.profile.dim * 4, "at least the vectors"
    json.dumps(report)


def test_recall_is_reported_per_conversation():
    conv = load_conversation(TINY)
    results = QuestionResults()
    for q in conv.scored_questions:
        results.add(conv.user_id, q.category, q.evidence, [("x", [f"s:{q.evidence[0]}"])])
    [(name, row)] = per_conversation(results, [conv], [TINY]).items()
    assert name == TINY.name and row["recall_any"][10] == 1.0
    # one evidence turn of each question found: all of them only where a question has one
    single = sum(len(set(q.evidence)) == 1 for q in conv.scored_questions)
    assert row["recall_all"][10] == single / len(conv.scored_questions)
