"""Through the in-process pipeline (extraction, dedup, store) and memory.query: a change
supersedes only what changed (issue 13 item 4), and a date a fact mentions is what a time
filter sees (item 2)."""
from __future__ import annotations

import json
from datetime import datetime, timezone

from streams.settings import Settings
from streams.app.inprocess import InProcessPipeline
from streams.read.categories import load_policy
from streams.read.query import execute, plan_query
from streams.read.token_budget import get_counter
from topics.query import QueryRequest
from topics.turns import Turn
from tests import defaults


def turn(turn_id: str, text: str, ts: str) -> Turn:
    return Turn(user_id="ana", thread_id="t1", turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts=ts)  # type: ignore[arg-type]


async def test_a_changed_age_leaves_the_adoption_active_and_findable(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    await pipeline.ingest([
        turn("1", "I adopted a dog named Luna last year, she is 3 now.", "2026-03-02T10:00:00+00:00"),
        turn("2", "I started a new pottery class at the community center.", "2026-03-02T10:05:00+00:00"),
        turn("3", "My brother Tom bought a red bike for his commute.", "2026-03-02T10:06:00+00:00"),
        turn("4", "Luna turned 4 last week!", "2026-05-01T10:00:00+00:00"),
    ])
    memories = pipeline.store.user_memories("ana")
    active = {m.summary for m in memories if m.state == "active"}
    superseded = {m.summary for m in memories if m.state == "superseded"}
    assert "Ana adopted a dog named Luna in 2025." in active
    assert superseded == {"Ana's dog Luna is 3 now."}, "only the age changed"
    assert any("Luna turned 4" in s for s in active)
    hits = await pipeline.query("ana", "dog", top_k=3)
    assert hits[0].memory.summary == "Ana adopted a dog named Luna in 2025."


async def test_an_in_year_question_finds_a_fact_told_the_year_after(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    await pipeline.ingest([
        turn("1", "I painted a lake at sunset with watercolors last year.", "2023-06-10T10:00:00+00:00"),
        turn("2", "I painted my kitchen walls yellow yesterday.", "2023-06-10T10:05:00+00:00"),
    ])
    index = pipeline.store.index().user("ana")
    lake = next(m for m in index.docs.values() if "lake" in m.summary)
    assert (lake.event_start.isoformat(), lake.event_end.isoformat()) == ("2022-01-01", "2022-12-31")
    assert lake.date_iso == "2023-06-10", "when it was said is kept apart"
    policy = load_policy()
    request = QueryRequest.model_validate_json(json.dumps(
        {"agent": "supervisor", "query": "What did Ana paint in 2022?", "top_k": 5}))
    plan = plan_query(request, "ana", policy, defaults.limits(), datetime(2023, 7, 1, tzinfo=timezone.utc))
    assert plan.window is not None and plan.window.start.year == 2022
    vector = (await pipeline.services.embed([request.query]))[0]
    response, hits = execute(index, vector, plan, policy, defaults.weights(), get_counter())
    summaries = [h.memory.summary for h in hits]
    assert any("lake" in s for s in summaries), summaries
    assert not any("kitchen" in s for s in summaries if "2022" not in s), "told and done in 2023"
