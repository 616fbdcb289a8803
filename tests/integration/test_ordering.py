"""A command said in chat applies after every fact of the turns before it, and never to a later
turn's memory — even with a full dedup batch of other users' facts queued ahead of it on the
same partition (the dedup stage is behind while the commands said in chat are not)."""
from __future__ import annotations

import asyncio

import pytest
from aiokafka.partitioner import murmur2

from tests.integration.conftest import (
    PARTITIONS,
    call,
    make_turn,
    produce,
    unique_user,
    wait_processed,
)

pytestmark = pytest.mark.integration
AHEAD = 70  # more than DEDUP_BATCH_SIZE (64): at least one full batch queued ahead


def partition_of(user: str) -> int:
    """The partition the default producer puts `user`'s records on (Kafka's murmur2)."""
    return (murmur2(user.encode()) & 0x7FFFFFFF) % PARTITIONS


def users_on(partition: int, count: int, prefix: str) -> list[str]:
    users: list[str] = []
    while len(users) < count:
        user = unique_user(prefix)
        if partition_of(user) == partition:
            users.append(user)
    return users


def test_chat_commands_apply_in_turn_order_behind_a_full_batch(worker):
    ana = unique_user("order")
    others = users_on(partition_of(ana), AHEAD + 1, "ahead")
    bo = others.pop()
    ahead = [make_turn(u, "1", f"I adopted a dog named Rex{i}.") for i, u in enumerate(others)]
    said = [
        make_turn(ana, "1", "My sister Emma is getting divorced."),
        make_turn(ana, "2", "Don't remember this."),
        make_turn(ana, "3", "I love hiking in the Alps.", ts="2024-05-01T10:05:00+00:00"),
        make_turn(bo, "1", "I love jazz music."),
        make_turn(bo, "2", "Please forget that I love jazz."),
    ]

    async def states(user: str) -> dict[str, str]:
        status, body = await call(worker.api_url, "GET", f"/v1/users/{user}/memories")
        assert status == 200, body
        return {m["summary"]: m["state"] for m in body["items"]}

    async def scenario() -> None:
        await produce(worker.broker_url, ahead + said)  # all at once: the dedup stage falls behind
        await wait_processed(worker.broker_url, ahead + said, timeout=300)
        assert await states(ana) == {"Ana's sister Emma is getting divorced.": "soft_deleted",
                                     "Ana loves hiking in the Alps.": "active"}
        assert await states(bo) == {"Ana loves jazz music.": "soft_deleted"}
        assert set((await states(others[0])).values()) == {"active"}

    asyncio.run(scenario())
