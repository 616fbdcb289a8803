"""memory.query over real HTTP on a worker: every field, allowlists failing closed, the budget
in real tokens, time phrases on episodic buckets, the delta header, and reads recorded through
the stream."""
from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest

from streams.read.token_budget import get_counter
from tests.integration.conftest import (
    ADMIN_KEY,
    PLANNER_KEY,
    call,
    make_turn,
    produce,
    unique_user,
    wait_processed,
)

pytestmark = pytest.mark.integration

TURNS = [  # (text, event time): what the rules extractor makes of each is noted
    ("I adopted a dog named Luna last year.", "2024-05-01T10:00:00+00:00"),  # episodic, Personal
    ("My goal is to run a marathon in October.", "2024-05-01T10:01:00+00:00"),  # Goals
    ("I work as a nurse at the children's hospital in Lisbon.", "2024-05-01T10:02:00+00:00"),
    ("I went hiking in the Alps with my sister Marta yesterday.", "2024-03-10T10:00:00+00:00"),  # episodic
    ("I pay 900 euros rent every month for my flat.", "2024-05-01T10:03:00+00:00"),  # Finance, imp 3
    ("I am saving 300 euros a month for a new car.", "2024-05-01T10:04:00+00:00"),  # Finance, imp 3
]


def when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def ask(worker, user: str, key: str = ADMIN_KEY, **body: Any) -> tuple[int, Any]:
    request = {"agent": "supervisor", "query": "What does Ana do?", **body}
    return asyncio.run(call(worker.api_url, "POST", f"/v1/users/{user}/query", request, key))


@pytest.fixture(scope="module")
def user(worker) -> str:
    user = unique_user("q")
    turns = [make_turn(user, str(i), text, ts=ts) for i, (text, ts) in enumerate(TURNS, 1)]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    return user


def test_full_answer_with_provenance_and_allowlists_failing_closed(worker, user):
    status, body = ask(worker, user, top_k=10, **{"return": "full"})
    assert status == 200, body
    summaries = [i["summary"] for i in body["items"]]
    assert len(summaries) == 6 and all(i["source_turn_ids"] for i in body["items"])
    assert {"score", "related", "text", "tokens", "state"} <= set(body["items"][0])
    assert not {"similarity", "rank_score"} & set(body["items"][0]), "one number unless explain"

    status, planner = ask(worker, user, PLANNER_KEY, agent="planner", query="money", top_k=10)
    assert status == 200 and planner["items"]
    assert {i["category"] for i in planner["items"]} <= {"Goals", "Budget", "Finance", "Conversation_Summary"}

    for key, body, message in [
        (PLANNER_KEY, {"agent": "supervisor"}, "may not query as agent"),
        (PLANNER_KEY, {"agent": "planner", "categories": ["Personal"]}, "not in the allowlist"),
        (PLANNER_KEY, {"agent": "planner", "filters": {"category": "Personal"}}, "not in the allowlist"),
        (ADMIN_KEY, {"agent": "intruder"}, "unknown agent"),
    ]:
        status, answer = ask(worker, user, key, **body)
        assert status == 403 and message in answer["error"], answer
    for body, message in [({"colour": "red"}, "body: unknown field"),
                          ({"filters": {"user_id": "someone-else"}}, "user of the route"),
                          ({"top_k": "3"}, "top_k"), ({"since_rev": 1}, "needs thread_id")]:
        status, answer = ask(worker, user, **body)
        assert status == 400 and message in answer["error"], answer
    # The GET form: the agent defaults to the key's own.
    status, answer = asyncio.run(call(worker.api_url, "GET", f"/v1/users/{user}/query?q=rent&top_k=2",
                                      key=PLANNER_KEY))
    assert status == 200 and answer["agent"] == "planner" and len(answer["items"]) <= 2


def test_filters_budget_time_phrases_and_delta(worker, user):
    status, finance = ask(worker, user, query="money", top_k=10,
                          filters={"category": "Finance", "importance_min": 3, "role": "user"},
                          **{"return": "full"})
    assert status == 200 and sorted(i["summary"] for i in finance["items"]) == [
        "Ana is saving 300 euros a month for a new car.",
        "Ana pays 900 euros rent every month for Ana's flat."]
    status, unimportant = ask(worker, user, query="money", top_k=10,
                              filters={"category": "Finance", "importance_max": 2})
    assert status == 200 and unimportant["items"] == []

    status, tight = ask(worker, user, top_k=10, budget_tokens=25)
    assert status == 200 and 0 < tight["tokens"] <= 25 and tight["dropped_for_budget"] > 0
    assert get_counter().count(tight["context"]) == tight["tokens"]
    assert set(tight["items"][0]) == {"id", "category", "type", "text", "tokens", "archived", "score"}, "bullets by default"

    status, march = ask(worker, user, query="What did I do in March?", top_k=6, **{"return": "full"})
    assert status == 200 and march["recall_intent"], march
    assert (march["time_window"]["start"], march["time_window"]["end"]) == ("2024-03-01", "2024-03-31")
    episodes = [i for i in march["items"] if i["type"] == "episodic"]
    assert episodes and all(i["date_iso"].startswith("2024-03") for i in episodes)
    assert any("Alps" in i["summary"] for i in episodes)

    status, delta = ask(worker, user, since_rev=0, thread_id="t1", top_k=2)
    assert status == 200 and delta["delta"]["rev"] >= 6
    assert delta["context"].startswith("Memory updates since rev 0:\n- +created")


def test_reads_refresh_last_accessed_and_access_count_through_the_stream(worker):
    user = unique_user("touch")  # nobody else reads this user's memories
    turns = [make_turn(user, str(i), text, ts=ts) for i, (text, ts) in enumerate((TURNS[2], TURNS[4]), 1)]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    api = worker.api_url
    pin = f"/v1/users/{user}/memories/{{}}/pin?wait=1"

    def memories() -> dict[str, dict]:
        status, body = asyncio.run(call(api, "GET", f"/v1/users/{user}/memories"))
        assert status == 200
        return {m["id"]: m for m in body["items"]}

    anchor = next(iter(memories()))
    # Commands of one user apply in order: once a later command has applied (wait=1), every
    # touch sent before it has too.
    assert asyncio.run(call(api, "POST", pin.format(anchor)))[0] == 200
    before = memories()
    peek = ask(worker, user, query="Where does Ana live?", top_k=2, record_access=False)
    assert peek[0] == 200 and peek[1]["items"]  # an evaluation read: must not count below
    status, answer = ask(worker, user, query="Where does Ana work?", top_k=1)
    read = {i["id"] for i in answer["items"]}
    assert status == 200 and len(read) == 1
    assert asyncio.run(call(api, "POST", pin.format(anchor)))[0] == 200
    after = memories()
    for memory_id, memory in after.items():
        expected = before[memory_id]["access_count"] + (1 if memory_id in read else 0)
        assert memory["access_count"] == expected, memory_id
    for memory_id in read:
        assert when(after[memory_id]["last_accessed"]) == when(answer["reference_time"])
        assert when(before[memory_id]["last_accessed"]) < when(after[memory_id]["last_accessed"])
