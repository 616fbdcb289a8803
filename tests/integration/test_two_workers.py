"""Scale-out: two workers share the partitions; either answers a query for any user."""
from __future__ import annotations

import asyncio

import pytest

from streams.tools.broker import EmbeddedBroker
from streams.app.topic_admin import create_topics
from tests.integration.conftest import (
    ADMIN_KEY,
    PARTITIONS,
    PLANNER_KEY,
    Worker,
    call,
    make_turn,
    produce,
    query,
    unique_user,
    wait_processed,
)
from streams.app.topology import ALL_TOPICS

pytestmark = pytest.mark.integration


def test_any_worker_answers_for_any_user(tmp_path):
    with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        first = Worker(broker.url, tmp_path / "d1", "memstream-two", tmp_path / "w1.log").start()
        second = Worker(broker.url, tmp_path / "d2", "memstream-two", tmp_path / "w2.log").start()
        try:
            # The first worker must have given up half of its partitions before we go on.
            asyncio.run(_until_both_own_partitions(first, second))
            users = users_on_every_partition(per_partition=2)
            turns = [t for i, u in enumerate(users) for t in (
                make_turn(u, "1", f"I adopted a parrot named Kiwi{i} last spring."),
                make_turn(u, "2", f"I am saving {100 + i} euros a month for a new car."))]
            asyncio.run(produce(broker.url, turns))
            asyncio.run(wait_processed(broker.url, turns, timeout=180))
            for i, user in enumerate(users):
                via_first = asyncio.run(query(first.api_url, user, "Which bird?", top_k=1))
                via_second = asyncio.run(query(second.api_url, user, "Which bird?", top_k=1))
                assert via_first and [m["id"] for m in via_first] == [m["id"] for m in via_second]
                assert f"Kiwi{i}" in via_first[0]["summary"]
                assert via_first[0]["user_id"] == user
                # The whole memory.query, POSTed (its body forwarded to the owner), from either.
                full = {"agent": "planner", "query": "How much does Ana save?", "top_k": 3,
                        "categories": ["Finance", "Budget"], "threshold": 0.01, "budget_tokens": 200,
                        "filters": {"user_id": user, "role": "user", "importance_max": 5},
                        "since_rev": 0, "thread_id": "t1", "return": "bullets"}
                answers = [asyncio.run(_post(w, user, full)) for w in (first, second)]
                assert answers[0] == answers[1] and answers[0][0] == 200, answers
                body = answers[0][1]
                assert [item["text"] for item in body["items"]] == [
                    f"[Finance] Ana is saving {100 + i} euros a month for a new car."]
                assert body["context"].startswith("Memory updates since rev 0:")
                refused = [asyncio.run(_post(w, user, {**full, "categories": ["Personal"]}, PLANNER_KEY))
                           for w in (first, second)]
                assert [status for status, _ in refused] == [403, 403], refused
            owners = {asyncio.run(_owner(first, u)) for u in users}
            assert owners == {first.port, second.port}, "users live on both workers"
        finally:
            second.stop()
            first.stop()


def users_on_every_partition(per_partition: int) -> list[str]:
    """Fresh user ids, `per_partition` hashed to each partition (the producer's partitioner)."""
    from aiokafka.partitioner import DefaultPartitioner

    partitioner, parts = DefaultPartitioner(), list(range(PARTITIONS))
    by_partition: dict[int, list[str]] = {p: [] for p in parts}
    while any(len(v) < per_partition for v in by_partition.values()):
        user = unique_user("two")
        bucket = by_partition[partitioner(user.encode(), parts, parts)]
        if len(bucket) < per_partition:
            bucket.append(user)
    return [u for users in by_partition.values() for u in users]


async def _until_both_own_partitions(a: Worker, b: Worker, timeout: float = 120.0) -> None:
    import time

    import aiohttp

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            counts = []
            for w in (a, b):
                async with session.get(w.api_url + "/health") as response:
                    counts.append((await response.json()).get("partitions", 0) if response.status == 200 else 0)
            if all(counts):
                return
            await asyncio.sleep(0.25)
    raise AssertionError("the two workers never shared the partitions")


async def _post(worker: Worker, user: str, body: dict, key: str = ADMIN_KEY) -> tuple[int, dict]:
    return await call(worker.api_url, "POST", f"/v1/users/{user}/query", body, key)


async def _owner(worker: Worker, user: str) -> int:
    """The port of the worker that holds `user` (answers /memories locally, not forwarded)."""
    status, body = await call(worker.api_url, "GET", f"/v1/users/{user}/owner")
    assert status == 200, body
    return int(body["port"])
