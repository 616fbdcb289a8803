"""End to end over TCP: embedded broker, a worker process, turns in, memories and events out."""
from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from tests.integration.conftest import (
    auth_headers,
    make_turn,
    memories,
    produce,
    query,
    read_all,
    unique_user,
    wait_processed,
)
from topics.names import CHAT_TURNS_DLQ, MEMORY_EVENTS

pytestmark = pytest.mark.integration

FACTS = [
    "I adopted a dog named Luna last year and she loves the beach.",
    "I work as a nurse at the children's hospital in Lisbon.",
    "My sister Marta is getting married in Porto next June.",
]


def test_turns_become_memories_with_provenance_and_query(worker):
    user = unique_user()
    turns = [make_turn(user, str(i), text) for i, text in enumerate(FACTS)]
    turns.append(make_turn(user, "hi", "Hi there!"))
    asyncio.run(produce(worker.broker_url, turns))
    progress = asyncio.run(wait_processed(worker.broker_url, turns))
    assert progress[(user, "t1", "hi")][0]["outcome"] == "skipped"

    items = asyncio.run(query(worker.api_url, user, "What pet does Ana have?", top_k=3))
    assert items, "no memories returned"
    top = items[0]
    assert "Luna" in top["summary"]
    assert top["source_turn_ids"] == ["t1:0"]
    assert {"id", "summary", "type", "category", "state", "score", "source_turn_ids"} <= set(top)
    assert all(i["state"] == "active" for i in items)

    created = asyncio.run(read_all(
        worker.broker_url, MEMORY_EVENTS,
        lambda e: e["user_id"] == user and e["kind"] == "created", expected=3,
    ))
    assert top["id"] in {e["memory_id"] for e in created}
    assert all(e["ts"].startswith("2024-05-01") for e in created), "event time must come from the turn"


def test_query_for_unknown_user_is_empty_and_bad_params_are_rejected(worker):
    assert asyncio.run(query(worker.api_url, unique_user(), "anything")) == []

    async def status(path: str) -> int:
        async with aiohttp.ClientSession(headers=auth_headers()) as session:
            async with session.get(worker.api_url + path) as response:
                return response.status

    assert asyncio.run(status("/v1/users/x/query")) == 400
    assert asyncio.run(status("/v1/users/x/query?q=a&top_k=0")) == 400
    assert asyncio.run(status("/v1/users/x/query?q=a&top_k=abc")) == 400


def test_bad_records_go_to_the_dlq_and_the_partition_keeps_flowing(worker):
    user = unique_user("dlq")
    key = user.encode()
    good = make_turn(user, "ok", "I bought a red bicycle for my commute to the office.")
    bad = {
        "malformed_json": b'{"user_id": "' + key + b'", "text": ',
        "not_utf8": b"\xff\xfe\xfa" + key,
        "invalid_schema": json.dumps({"user_id": user, "thread_id": "t1", "turn_id": "x"}).encode(),
        "oversized_text": make_turn(user, "big", "word " * 5000).model_dump_json().encode(),
    }

    async def send_all() -> None:
        from streams.tools.client import TurnProducer

        async with TurnProducer(worker.broker_url) as producer:
            for value in bad.values():
                await producer.send_raw(key, value)
            await producer.send_turn(good)
            await producer.flush()

    asyncio.run(send_all())
    asyncio.run(wait_processed(worker.broker_url, [good]))  # the good turn after them got through
    letters = asyncio.run(read_all(worker.broker_url, CHAT_TURNS_DLQ, lambda d: d["key"] == user, 4))
    assert sorted(d["reason"] for d in letters) == sorted(bad)
    assert all(d["stage"] == "ingest" for d in letters)
    import base64

    assert {base64.b64decode(d["raw_b64"]) for d in letters} == set(bad.values()), "raw bytes kept"

    async def metrics_text() -> str:
        async with aiohttp.ClientSession(headers=auth_headers()) as session:
            async with session.get(worker.api_url + "/metrics") as response:
                return await response.text()

    text = asyncio.run(metrics_text())
    for reason in bad:
        assert f'memstream_dlq_records_total{{reason="{reason}",stage="ingest"}}' in text


def test_replaying_the_same_turns_creates_nothing_new(worker):
    user = unique_user("replay")
    turns = [make_turn(user, str(i), text) for i, text in enumerate(FACTS)]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    before = asyncio.run(memories(worker.api_url, user))

    # Replay, then a sentinel turn on the same key: per-partition order means that once the
    # sentinel is through, the replayed turns are too.
    sentinel = make_turn(user, "sentinel", "I started learning the cello in January.")
    asyncio.run(produce(worker.broker_url, turns + [sentinel]))
    asyncio.run(wait_processed(worker.broker_url, [sentinel]))
    after = asyncio.run(memories(worker.api_url, user))

    old = {m["id"]: m for m in before}
    replayed = [m for m in after if m["source_turn_ids"] != ["t1:sentinel"]]
    assert {m["id"] for m in replayed} == set(old)
    assert all(m["version"] == old[m["id"]]["version"] for m in replayed)
    events = asyncio.run(read_all(
        worker.broker_url, MEMORY_EVENTS,
        lambda e: e["user_id"] == user and e["kind"] in ("created", "updated"), expected=len(after) + len(before),
    ))
    by_id: dict[str, dict] = {}
    for e in events:
        if e["event_id"] in by_id:
            assert by_id[e["event_id"]] == e, "a re-sent event must be identical"
        by_id[e["event_id"]] = e
    assert len(by_id) == len(after)
