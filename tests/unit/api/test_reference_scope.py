"""A memory's links to memories the caller may not see — `related_ids`, `relations` and their
strengths, an audit entry's edges — are left out of every answer that shows the memory: the
list, one memory, its history, the export and a full query answer, as fetching such a memory is
a 404. An admin sees them all."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np
import pytest

from streams.api.query import answer
from streams.api.registry import ROUTES, USER
from streams.app.inprocess import InProcessPipeline
from streams.memory.model import Memory
from streams.settings import Settings
from tests.unit.api.inprocess_registry import ADMIN, PLANNER, Registry
from topics.query import QueryRequest

NOW = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
GOAL, HOBBY, HABIT = "goal-1", "hobby-1", "habit-1"
"""A Goals memory the planner sees, and two Personal ones it does not, linked to it: the goal's
own edge to the hobby (stored in the goal, with its LINK audit entry), and the habit's edge to
the goal (stored in the habit, served from the goal's end too)."""
HIDDEN = (HOBBY, HABIT)


def memory(memory_id: str, category: str, summary: str, **fields) -> Memory:
    return Memory(id=memory_id, user_id="ana", type="semantic", category=category, summary=summary,
                  created_at=NOW, updated_at=NOW, last_accessed=NOW, **fields)


@pytest.fixture
async def registry(tmp_path, minilm_embedder, monkeypatch) -> Registry:
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    docs = [memory(GOAL, "Goals", "Ana wants to play the saxophone in a jazz band.",
                   related_ids=[HOBBY], relations={HOBBY: 0.81}),
            memory(HOBBY, "Personal", "Ana plays the saxophone every Sunday in Lisbon."),
            memory(HABIT, "Personal", "Ana practises the saxophone with her father.",
                   relations={GOAL: 0.77})]
    vectors = np.asarray(minilm_embedder.embed([d.summary for d in docs]))
    state = pipeline.store.state()
    for doc, vector in zip(docs, vectors):
        state.store(doc, vector)
    state.audit.record_link(docs[0], NOW, {HOBBY: 0.81})
    pipeline.store.tables.flush()
    return Registry(pipeline, monkeypatch)


def leaks(body: object) -> list[str]:
    text = json.dumps(body)
    return [memory_id for memory_id in HIDDEN if memory_id in text] + [
        strength for strength in ("0.81", "0.77") if strength in text]


async def test_the_list_one_memory_its_history_and_the_export_carry_no_hidden_link(registry):
    path = "/v1/users/ana/memories"
    status, listed = await registry.call(ROUTES[USER + "/memories"], "get", path, PLANNER, user_id="ana")
    assert status == 200 and [m["id"] for m in listed["items"]] == [GOAL]
    assert listed["items"][0]["related_ids"] == [] and listed["items"][0]["relations"] == {}
    status, one = await registry.call(ROUTES[USER + "/memories/{memory_id}"], "get", f"{path}/{GOAL}",
                                      PLANNER, user_id="ana", memory_id=GOAL)
    assert status == 200 and one["summary"].startswith("Ana wants") and not leaks(one)
    status, history = await registry.call(ROUTES[USER + "/memories/{memory_id}/history"], "get",
                                          f"{path}/{GOAL}/history", PLANNER, user_id="ana",
                                          memory_id=GOAL)
    assert status == 200 and [e["verb"] for e in history["history"]][-1] == "LINK"
    assert history["history"][-1]["meta"] == {"edges": {}}
    status, export = await registry.call(ROUTES[USER + "/export"], "get", "/v1/users/ana/export",
                                         PLANNER, user_id="ana")
    assert status == 200 and [m["id"] for m in export["memories"]] == [GOAL]
    for body in (listed, one, history, export):
        assert not leaks(body), leaks(body)

    status, seen = await registry.call(ROUTES[USER + "/memories"], "get", path, ADMIN, user_id="ana")
    goal = next(m for m in seen["items"] if m["id"] == GOAL)
    assert goal["relations"] == {HOBBY: 0.81, HABIT: 0.77} and set(goal["related_ids"]) == set(HIDDEN)


async def test_a_full_query_answer_carries_no_id_or_score_of_a_hidden_memory(registry):
    app = registry.app.memstream

    async def ask(agent: str, principal) -> dict:
        request = QueryRequest.model_validate_json(json.dumps(
            {"agent": agent, "query": "saxophone", "return": "full", "top_k": 5,
             "record_access": False}))
        return await answer(app, request, "ana", principal)  # type: ignore[arg-type]

    planner = await ask("planner", PLANNER)
    assert [item["id"] for item in planner["items"]] == [GOAL]
    [item] = planner["items"]
    assert item["relations"] == {} and item["related_ids"] == [] and item["related"] == []
    assert not leaks(planner), leaks(planner)
    as_planner = await ask("planner", ADMIN)  # an admin asking as the planner: its allowlist
    assert not leaks(as_planner), leaks(as_planner)
    everything = await ask("supervisor", ADMIN)
    goal = next(i for i in everything["items"] if i["id"] == GOAL)
    assert set(goal["relations"]) == {HOBBY, HABIT}


async def test_a_hidden_link_adds_nothing_to_the_score_of_a_visible_memory(registry):
    """The ranking's related term counts the edges the query may read: the planner's rank score
    of the goal is the one it has with its Personal links cut."""
    app = registry.app.memstream
    request = QueryRequest.model_validate_json(json.dumps(
        {"agent": "planner", "query": "saxophone", "return": "full", "record_access": False,
         "explain": True}))
    linked = (await answer(app, request, "ana", PLANNER))["items"][0]["explain"]["rank_score"]  # type: ignore[arg-type]
    state = registry.pipeline.store.state()
    for memory_id in (GOAL, HABIT):
        cut = state.memory(memory_id).model_copy(update={"relations": {}, "related_ids": []})  # type: ignore[union-attr]
        state.store(cut)
    registry.pipeline.store.tables.flush()
    alone = (await answer(app, request, "ana", PLANNER))["items"][0]["explain"]["rank_score"]  # type: ignore[arg-type]
    assert linked == alone
