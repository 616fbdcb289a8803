"""At-least-once with deterministic ids: SIGKILL the worker mid-replay, restart, compare.

The Tansu broker answers ListOffsets wrongly after multi-record batches, which once crashed
table recovery after a kill; the worker produces one record per batch. This test keeps that
regression visible.
"""
from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from streams.tools.broker import EmbeddedBroker
from streams.app.topic_admin import create_topics
from tests.integration.conftest import (
    NO_LIFECYCLE,
    PARTITIONS,
    Worker,
    make_turn,
    memories,
    produce,
    unique_user,
    wait_processed,
)
from streams.app.topology import ALL_TOPICS
from topics.turns import Turn

pytestmark = pytest.mark.integration

NAMES = ["Luna", "Milo", "Nora", "Otto", "Pia", "Rui", "Sara", "Tomas", "Uma", "Vera"]
CITIES = ["Lisbon", "Berlin", "Porto", "Madrid", "Oslo", "Vienna", "Prague", "Dublin"]
TEMPLATES = [
    "I adopted a cat named {name} when I lived in {city}.",
    "My friend {name} is moving to {city} for a new job in {n} weeks.",
    "I ran {n} kilometres along the river in {city} last weekend.",
    "My favourite restaurant in {city} serves grilled fish and {name} loves it too.",
    "I have been saving {n}00 euros every month for a trip to {city}.",
    "Ok thanks!",
]


def synthetic_turns(user: str, count: int) -> list[Turn]:
    rng = random.Random(7)
    turns = []
    for i in range(count):
        text = rng.choice(TEMPLATES).format(name=rng.choice(NAMES), city=rng.choice(CITIES),
                                            n=rng.randint(2, 9))
        thread = f"s{i // 20}"
        turns.append(make_turn(user, f"{i}", text, thread=thread,
                               ts=f"2024-05-{1 + i // 20:02d}T10:{i % 60:02d}:00+00:00"))
    return turns


def memory_fingerprint(items: list[dict]) -> Counter:
    return Counter((m["summary"], tuple(sorted(m["source_turn_ids"])), m["state"]) for m in items)


def test_sigkill_mid_replay_loses_and_duplicates_nothing(tmp_path):
    with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        data = tmp_path / "data"
        worker = Worker(broker.url, data, "memstream-kill", tmp_path / "worker.log",
                        env=NO_LIFECYCLE).start()
        try:
            # Reference: the same turns, uninterrupted, as another user.
            ref_user = unique_user("ref")
            ref_turns = synthetic_turns(ref_user, 120)
            asyncio.run(produce(broker.url, ref_turns))
            asyncio.run(wait_processed(broker.url, ref_turns, timeout=600))
            reference = asyncio.run(memories(worker.api_url, ref_user))

            user = unique_user("kill")
            turns = synthetic_turns(user, 120)
            asyncio.run(produce(broker.url, turns))
            asyncio.run(wait_processed(broker.url, turns, stop_after=25, timeout=120))
            worker.kill()

            worker = Worker(broker.url, data, "memstream-kill", tmp_path / "worker2.log",
                            env=NO_LIFECYCLE, port=worker.port).start()
            progress = asyncio.run(wait_processed(broker.url, turns, timeout=600))
            result = asyncio.run(memories(worker.api_url, user))
        finally:
            worker.stop()

    assert len(progress) == len(turns), "every turn processed"
    assert reference, "the reference run wrote memories"
    ids = [m["id"] for m in result]
    assert len(ids) == len(set(ids))
    got, want = memory_fingerprint(result), memory_fingerprint(reference)
    assert got == want, (
        "killed-and-restarted run must end with exactly the memories of the uninterrupted run: "
        f"extra {list((got - want).elements())[:5]}, missing {list((want - got).elements())[:5]}")
