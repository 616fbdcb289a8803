"""The pipeline end to end on a real Apache Kafka (KRaft) instead of the embedded broker:
turns in, memories out, and a replay that changes nothing."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Iterable

import pytest

from tests.containers.conftest import start_worker
from tests.integration.conftest import Worker, make_turn, produce, read_all, unique_user, wait_processed
from topics.names import MEMORY_EVENTS

FACTS = ["I adopted a dog named Luna last year.", "I work as a nurse at the children's hospital in Lisbon."]


@pytest.fixture(scope="module")
def worker(kafka_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterable[Worker]:
    workdir: Path = tmp_path_factory.mktemp("kafka-worker")
    w = start_worker(kafka_url, workdir, "memstream-tc-kafka")
    try:
        yield w
    finally:
        w.stop()


def test_turns_become_memories_and_a_replay_adds_nothing(worker: Worker):
    user = unique_user("kafka")
    turns = [make_turn(user, str(i), text) for i, text in enumerate(FACTS)]
    asyncio.run(produce(worker.broker_url, turns))
    progress = asyncio.run(wait_processed(worker.broker_url, turns))
    assert all(any(p["outcome"] == "created" for p in progress[(user, "t1", t.turn_id)]) for t in turns)
    created = asyncio.run(read_all(worker.broker_url, MEMORY_EVENTS,
                                   lambda e: e["user_id"] == user and e["kind"] == "created", len(FACTS)))
    assert {e["meta"]["source_turn_id"] for e in created} == {t.ref for t in turns}

    # The same turns again, then a sentinel on the same key: once it is through, so are they.
    sentinel = make_turn(user, "sentinel", "I started learning the cello in January.")
    asyncio.run(produce(worker.broker_url, [*turns, sentinel]))
    asyncio.run(wait_processed(worker.broker_url, [sentinel]))
    # Per key, the topic now holds: the first events, the replay's re-sent ones, the sentinel's.
    after = asyncio.run(read_all(worker.broker_url, MEMORY_EVENTS,
                                 lambda e: e["user_id"] == user and e["kind"] == "created", 2 * len(FACTS) + 1))
    replayed = [e for e in after if e["meta"]["source_turn_id"] != sentinel.ref]
    assert len(replayed) == 2 * len(FACTS) and len(after) - len(replayed) == 1
    assert {e["event_id"] for e in replayed} == {e["event_id"] for e in created}, \
        "a replayed turn re-sends its identical events, never new memories"
