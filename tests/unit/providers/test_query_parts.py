"""The model's searches for a question that combines facts (`GuardedLLM.query_parts`,
streams/read/model_parts.py): asked over the real AsyncAnthropic client of a local fake Messages
API, used as the question's parts, kept per question, and the rules' parts when it fails."""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime, timezone

import numpy as np
import pytest

from streams.guarded.llm import GuardedLLM
from streams.memory.model import Memory
from streams.memory.vector_index import UserIndex
from streams.providers.llm import Task
from streams.providers.llm.prompts import system_prompt
from streams.read.categories import load_policy
from streams.read.model_parts import ModelParts
from streams.read.query import QueryPlan, execute, plan_query
from streams.read.token_budget import get_counter
from tests import defaults
from tests.unit.providers.conftest import (
    HANG_GUARD_S, FakeMessagesAPI, Reply, fallbacks, guarded_over, settings,
)
from topics.query import QueryRequest

NOW = datetime(2024, 5, 15, 12, tzinfo=timezone.utc)
DIM = 16
Q = np.eye(DIM, dtype=np.float32)[0]
POLICY = load_policy()
QUESTION = "What activities does Ana partake in?"
MODEL_PARTS = {"parts": ["Ana paints watercolours", "Ana goes camping", "Ana signed up for pottery"]}


@pytest.fixture
async def llm(fake_api: FakeMessagesAPI) -> AsyncIterator[GuardedLLM]:
    async with guarded_over(fake_api, llm_query_budget_ms=600_000) as guarded:
        yield guarded


def planned(question: str = QUESTION) -> QueryPlan:
    request = QueryRequest.model_validate_json(json.dumps(
        {"agent": "supervisor", "query": question, "top_k": 3}))
    return plan_query(request, "u", POLICY, defaults.limits(), NOW)


async def test_the_model_names_the_searches_of_a_combining_question(
        llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    fake_api.script(Reply.json(MODEL_PARTS))
    parts = ModelParts(llm.query_parts)
    plan = planned()
    assert plan.combining == "list" and plan.parts == (), "the rules cannot split this question"

    got = await asyncio.wait_for(parts.planned(plan), HANG_GUARD_S)

    assert got.parts == tuple(MODEL_PARTS["parts"])
    assert got == replace(plan, parts=got.parts), "only the parts change"
    (request,) = fake_api.requests
    assert request["body"]["system"] == system_prompt(Task.query_parts)
    assert json.loads(request["body"]["messages"][0]["content"]) == {"question": QUESTION}
    again = await parts.planned(planned())
    assert again.parts == got.parts and len(fake_api.requests) == 1, "kept for the same question"


async def test_a_question_one_memory_answers_asks_no_model(
        llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    plan = planned("What is Ana's job?")
    assert await ModelParts(llm.query_parts).planned(plan) is plan
    assert fake_api.requests == []


@pytest.mark.parametrize(("reply", "reason"), [
    (Reply(text="Sure, here are some searches"), "invalid_output"),
    (Reply.error(500), "server_error"),
    (Reply.json({"parts": []}), "invalid_output"),
    (Reply.json({"parts": ["Ana paints watercolours"]}), None),  # valid, but one search
    (Reply.json({"parts": ["Ben", "Cy goes camping", "Ana"]}), None),  # one shares the question's words
])
async def test_a_failed_or_single_answer_leaves_the_rules_parts(
        llm: GuardedLLM, fake_api: FakeMessagesAPI, reply: Reply, reason: str | None) -> None:
    fake_api.script(reply)
    plan = planned("Did Ana adopt the dog before or after her new job?")
    counted = {r: fallbacks("anthropic", "query_parts", r) for r in ("invalid_output", "server_error")}
    got = await asyncio.wait_for(ModelParts(llm.query_parts).planned(plan), HANG_GUARD_S)
    assert got.parts == plan.parts == ("Did Ana adopt the dog", "her new job")
    for r, before in counted.items():
        assert fallbacks("anthropic", "query_parts", r) == before + (r == reason)


async def test_no_model_keeps_the_rules_parts() -> None:
    plan = planned("Did Ana adopt the dog before or after her new job?")
    assert await ModelParts(None).planned(plan) is plan
    no_provider = GuardedLLM(None, settings())
    assert await no_provider.query_parts(QUESTION) is None


async def test_the_cache_keeps_the_latest_questions() -> None:
    asked: list[str] = []

    async def model(question: str) -> list[str]:
        asked.append(question)
        return [f"{question} one", f"{question} two"]

    parts = ModelParts(model, cache_size=2)
    questions = ["How many times did Ana swim?", "How many times did Ben run?",
                 "How many times did Cy ski?"]
    for question in [*questions, questions[2], questions[0]]:
        await parts.planned(planned(question))
    assert asked == [*questions, questions[0]], "the oldest question was dropped, the newest kept"


def mem(i: str, summary: str) -> Memory:
    return Memory(id=i, user_id="u", type="semantic", category="Personal", summary=summary,
                  created_at=NOW, updated_at=NOW, last_accessed=NOW, source_turn_ids=[f"s:{i}"])


async def test_the_answer_holds_the_evidence_of_each_search_the_model_named(
        llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    """Three activities said in words the question does not use, below memories that match
    it: the rules' answer of three has none of them, the model's searches bring each in."""
    fake_api.script(Reply.json(MODEL_PARTS))
    pairs = [(mem("a1", "Ana likes the activities at the gym."), 0.9),
             (mem("a2", "Ana takes part in the book club activities."), 0.88),
             (mem("a3", "Ana's activities keep her busy."), 0.87),
             (mem("paint", "Ana paints watercolours on Sundays."), 0.3),
             (mem("camp", "Ana goes camping with her brother."), 0.3),
             (mem("pottery", "Ana signed up for a pottery class."), 0.3),
             *[(mem(f"x{i}", f"Ana met friend {i}."), 0.2) for i in range(6)]]
    index = UserIndex(DIM)
    for axis, (memory, similarity) in enumerate(pairs, start=1):
        index.upsert(memory, (similarity * Q + np.sqrt(1 - similarity ** 2)
                              * np.eye(DIM, dtype=np.float32)[axis]).astype(np.float32))

    def answer(plan: QueryPlan) -> set[str]:
        response, _ = execute(index, Q, plan, POLICY, defaults.weights(), get_counter(),
                              retrieval=defaults.retrieval())
        return {item["id"] for item in response.items}

    rules = planned()
    assert not {"paint", "camp", "pottery"} & answer(rules)
    assert answer(await ModelParts(llm.query_parts).planned(rules)) == {"paint", "camp", "pottery"}


async def test_the_query_route_asks_the_model_only_for_an_allowed_combining_query(
        llm: GuardedLLM, fake_api: FakeMessagesAPI, tmp_path, minilm_embedder) -> None:
    """`streams.api.query.answer` over an in-process pipeline whose model is the fake: a
    combining question is answered with the evidence of the model's searches; a question one
    memory answers, and a query the agent may not make, never reach the model."""
    from types import SimpleNamespace

    from streams.api import auth
    from streams.api.query import answer as query_answer
    from streams.app.inprocess import InProcessPipeline
    from streams.read.errors import QueryForbidden

    fake_api.script(Reply.json(MODEL_PARTS))
    pipeline = InProcessPipeline(llm.settings.with_values(table_store="memory://", data_dir=tmp_path),
                                 minilm_embedder, llm=llm)
    docs = [mem("paint", "Ana paints watercolours on Sundays."),
            mem("camp", "Ana goes camping with her brother."),
            mem("pottery", "Ana signed up for a pottery class."),
            *[mem(f"x{i}", f"Ana's activities at work kept her busy in week {i}.") for i in range(8)]]
    state = pipeline.store.state()
    for doc, vector in zip(docs, np.asarray(minilm_embedder.embed([d.summary for d in docs]))):
        state.store(doc.model_copy(update={"user_id": "ana"}), vector)
    pipeline.store.tables.flush()
    app = SimpleNamespace(store=pipeline.store, settings=pipeline.settings, services=pipeline.services,
                          outputs=pipeline.outputs)
    admin = auth.Principal("ops", "admin")

    def request(question: str, agent: str = "supervisor") -> QueryRequest:
        return QueryRequest.model_validate_json(json.dumps(
            {"agent": agent, "query": question, "top_k": 5, "record_access": False}))

    with pytest.raises(QueryForbidden):
        await query_answer(app, request(QUESTION), "ana", auth.Principal("planner", "agent"))
    await query_answer(app, request("What is Ana's job?"), "ana", admin)
    assert fake_api.requests == []
    body = await asyncio.wait_for(query_answer(app, request(QUESTION), "ana", admin), HANG_GUARD_S)
    assert {"paint", "camp", "pottery"} <= {item["id"] for item in body["items"]}
    assert len(fake_api.requests) == 1
