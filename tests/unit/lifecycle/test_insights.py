"""Theory-of-mind insights (seed 001 §3): only with an LLM, once per 24 h of event time."""
from __future__ import annotations

import json
from datetime import timedelta

from streams.settings import Settings
from streams.lifecycle.insights import InsightPass
from streams.guarded.llm import GuardedLLM
from tests.unit.lifecycle.conftest import USER, FakeMessagesAPI, Memories, Reply, day, snapshot

INSIGHT = {"summary": "Ana trusts advice more when the trade-offs are spelled out.",
           "tags": ["trust", "style"], "importance": 2}


def some_memories(memories: Memories) -> list[str]:
    return [memories.add("On 2024-05-01 (W18, 2024) we discussed Ana's job offer. Approach: "
                         "weighed salary against commute.", day(1)).id,
            memories.add("Ana works as a nurse in Lisbon.", day(2), type="semantic").id]


async def test_with_no_llm_the_pass_does_nothing(memories):
    some_memories(memories)
    before = snapshot(memories.state)
    assert await InsightPass(None)(memories.state, USER, day(3)) == []
    assert await InsightPass(GuardedLLM(None, Settings()))(memories.state, USER, day(3)) == []
    assert snapshot(memories.state) == before


async def test_an_insight_is_stored_with_low_importance_links_and_provenance(
        memories, fake_llm: GuardedLLM, fake_api: FakeMessagesAPI):
    ids = some_memories(memories)
    fake_api.script(Reply.json({"insights": [INSIGHT]}))
    [event] = await InsightPass(fake_llm, embed=memories.embed)(memories.state, USER, day(3))
    insight = memories.state.memory(event.memory_id)
    assert event.kind == "created" and event.meta["reason"] == "insight"
    assert insight.type == "insight" and insight.category == "Relationship_Dynamic"
    assert insight.importance == 2 and not insight.pinned and insight.summary == INSIGHT["summary"]
    assert insight.related_ids == ids and insight.source_turn_ids == ["t1:1", "t1:2"]
    sent = json.loads(fake_api.requests[0]["body"]["messages"][0]["content"])
    assert [i["summary"][:7] for i in sent["activity"]] == ["On 2024"]
    assert sent["semantic"][0]["summary"] == "Ana works as a nurse in Lisbon."
    assert fake_api.requests[0]["body"]["max_tokens"] == 220


async def test_runs_at_most_once_per_24_hours_of_event_time(
        memories, fake_llm: GuardedLLM, fake_api: FakeMessagesAPI):
    some_memories(memories)
    fake_api.script(Reply.json({"insights": [INSIGHT]}))
    insights = InsightPass(fake_llm)
    assert len(await insights(memories.state, USER, day(3))) == 1
    memories.add("Ana started a new night shift rota.", day(3, hour=12), type="semantic")
    assert await insights(memories.state, USER, day(3, hour=20)) == []
    assert len(fake_api.requests) == 1, "not asked again within 24 h"
    assert await insights(memories.state, USER, day(3)) == []
    assert len(await insights(memories.state, USER, day(4, hour=11))) == 1
    assert len(fake_api.requests) == 2


async def test_nothing_new_means_no_call(memories, fake_llm: GuardedLLM, fake_api: FakeMessagesAPI):
    some_memories(memories)
    fake_api.script(Reply.json({"insights": []}))
    insights = InsightPass(fake_llm)
    assert await insights(memories.state, USER, day(3)) == [], "an empty answer creates nothing"
    assert await insights(memories.state, USER, day(3) + timedelta(days=2)) == []
    assert len(fake_api.requests) == 1, "no new memory since the last run: the model is not asked"


async def test_an_insight_about_the_ai_or_a_failing_model_creates_nothing(
        memories, fake_llm: GuardedLLM, fake_api: FakeMessagesAPI):
    some_memories(memories)
    fake_api.script(Reply.json({"insights": [{"summary": "Ana likes the assistant's jokes."}]}))
    assert await InsightPass(fake_llm)(memories.state, USER, day(3)) == []
    memories.add("Ana adopted a cat named Miso.", day(5), type="semantic")
    fake_api.script(Reply.error(500))
    assert await InsightPass(fake_llm)(memories.state, USER, day(6)) == []
    assert all(m.type != "insight" for m in memories.state.index.user(USER).docs.values())
