"""Dead letters can be re-driven (`memstream dlq list|replay`), against a real broker and workers.

The story: a worker deployed with too low a `MAX_TURN_CHARS` dead-letters ordinary turns as
`oversized_text`. The limit is raised (a worker with the default settings takes over the same
group and tables), `memstream dlq list` shows which letters can be replayed and why the others
cannot (truncated, withheld, unreadable after the user's purge), and `memstream dlq replay` sends
the replayable one back to `chat.turns`: its memory is stored once. A second replay of the same
letter makes nothing new.

The module runs its own broker: its workers take over each other's consumer group.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.app.topic_admin import create_topics
from streams.app.topology import ALL_TOPICS
from streams.kafka.highwaters import true_end_offsets
from streams.tools.broker import EmbeddedBroker
from streams.tools.client import TurnProducer
from streams.tools.redrive import REPLAYED_FROM
from tests.integration.conftest import (
    MASTER_KEY,
    PARTITIONS,
    Worker,
    call,
    make_turn,
    memories,
    produce,
    read_all,
    unique_user,
    wait_processed,
)
from topics.names import CHAT_TURNS, CHAT_TURNS_DLQ, MEMORY_EVENTS

pytestmark = pytest.mark.integration
ROOT = Path(__file__).parents[2]
APP_ID = "memstream-dlq"
TOO_STRICT = {"MAX_TURN_CHARS": "40", "DLQ_MAX_RAW_BYTES": "1024"}
"""The faulty deployment: turns over 40 characters are refused; letters keep 1 KiB."""


async def committed_to_end(broker_url: str, group: str, topic: str, timeout: float = 120.0) -> None:
    """Wait until `group` has committed `topic` to its end on every partition: the strict
    worker is done with every turn, and the worker after it does not take them again. The
    timeout guards a hang; it is never what the test measures."""
    consumer = AIOKafkaConsumer(bootstrap_servers=broker_url, group_id=group, enable_auto_commit=False)
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    deadline = time.monotonic() + timeout
    try:
        while True:
            ends = await true_end_offsets(consumer, tps)
            committed = {tp: (await consumer.committed(tp)) or 0 for tp in tps}
            if all(committed[tp] >= ends[tp] for tp in tps):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic} committed {committed}, end {ends}")
            await asyncio.sleep(0.25)
    finally:
        await consumer.stop()


def dlq(*args: str, env: dict[str, str]) -> dict:
    """`memstream dlq …  --json` as a subprocess; its JSON answer."""
    result = subprocess.run([sys.executable, "-m", "streams", "dlq", *args, "--json"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


async def replayed_headers(broker_url: str, user: str) -> list[dict[str, bytes]]:
    """The headers of every record of `user` on `chat.turns` (read to its current end)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=broker_url, enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer.topics()
        tps = [TopicPartition(CHAT_TURNS, p) for p in consumer.partitions_for_topic(CHAT_TURNS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await true_end_offsets(consumer, tps)
        found = []
        while any([await consumer.position(tp) < end for tp, end in ends.items()]):
            for records in (await consumer.getmany(*tps, timeout_ms=1000)).values():
                found += [dict(r.headers) for r in records if r.key == user.encode()]
        return found
    finally:
        await consumer.stop()


def test_dead_letters_are_listed_and_replayed_once_their_cause_is_fixed(tmp_path):
    user, purged = unique_user("dlq"), unique_user("dlq-purged")
    fixed = make_turn(user, "1", "I adopted a dog named Luna last year, she is a beagle.")
    long = make_turn(user, "2", "I moved to Porto for a new job at the harbour. " * 40)
    keyless = make_turn(user, "3", "Hi.").model_dump_json().encode()
    forgotten = make_turn(purged, "1", "My sister Vera lives in Berlin with her two cats.")
    kept = make_turn(purged, "2", "I adopted a cat named Tom.")  # short enough: a memory

    with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        env = dict(os.environ, KAFKA_BROKER_URL=broker.url, MEMSTREAM_MASTER_KEY=MASTER_KEY,
                   APP_ID=APP_ID, DATA_DIR=str(tmp_path / "cli"))
        data = tmp_path / "data"

        strict = Worker(broker.url, data, APP_ID, tmp_path / "strict.log", env=TOO_STRICT).start()
        try:
            async def send_all() -> None:
                await produce(broker.url, [fixed, long, forgotten, kept])
                async with TurnProducer(broker.url) as producer:
                    await producer.send_raw(None, keyless)
                    await producer.flush()

            asyncio.run(send_all())
            asyncio.run(read_all(broker.url, CHAT_TURNS_DLQ, lambda d: d["key"] in (user, purged), 4))
            asyncio.run(wait_processed(broker.url, [kept]))
            asyncio.run(committed_to_end(broker.url, APP_ID, CHAT_TURNS))
        finally:
            strict.stop()

        worker = Worker(broker.url, data, APP_ID, tmp_path / "worker.log").start()
        try:
            status, body = asyncio.run(call(worker.api_url, "DELETE", f"/v1/users/{purged}?wait=1"))
            assert status == 200, body
            # the `purged` event of the user's memory goes out after their key is shredded
            asyncio.run(read_all(broker.url, MEMORY_EVENTS,
                                 lambda e: e["user_id"] == purged and e["kind"] == "purged", 1))

            listed = dlq("list", "--topic", "chat.turns", env=env)
            mine = [d for d in listed["dead_letters"] if d["user_id"] in (user, purged)]
            assert len(mine) == 4
            fate = {(d["user_id"], d["reason"], d["why_not"]) for d in mine}
            assert fate == {(user, "oversized_text", None), (user, "oversized_text", "truncated"),
                            (user, "missing_key", "withheld"), (purged, "oversized_text", "unreadable")}
            assert "Luna" not in json.dumps(listed) and "Vera" not in json.dumps(listed)
            [letter] = [d for d in mine if d["replayable"]]
            assert letter["stage"] == "ingest" and letter["topic"] == CHAT_TURNS

            dry = dlq("replay", "--reason", "oversized_text", "--dry-run", env=env)
            assert dry["would_replay"] == 1 and dry["replayed"] == 0
            assert memories_of(worker, user) == [], "a dry run sends nothing"

            first = dlq("replay", "--reason", "oversized_text", env=env)
            assert first["replayed"] == 1
            assert first["skipped"] == {"truncated": 1, "unreadable": 1}
            asyncio.run(wait_processed(broker.url, [fixed]))
            [memory] = memories_of(worker, user)
            assert "Luna" in memory["summary"] and memory["source_turn_ids"] == ["t1:1"]
            where = f"{letter['dlq']}/{letter['partition']}/{letter['offset']}"
            assert [h[REPLAYED_FROM] for h in asyncio.run(replayed_headers(broker.url, user))
                    if REPLAYED_FROM in h] == [where.encode()]

            # The same letter again: the turn log knows the turn, nothing new is made. A later
            # turn on the same key is processed after it (one partition, in order).
            second = dlq("replay", "--reason", "oversized_text", env=env)
            assert second["replayed"] == 1
            sentinel = make_turn(user, "4", "I started learning the cello in January.")
            asyncio.run(produce(broker.url, [sentinel]))
            asyncio.run(wait_processed(broker.url, [sentinel]))
            after = memories_of(worker, user)
            again = [m for m in after if m["source_turn_ids"] == ["t1:1"]]
            assert [(m["id"], m["version"]) for m in again] == [(memory["id"], memory["version"])]
            assert all(m["source_turn_ids"] in (["t1:1"], ["t1:4"]) for m in after)
            created = asyncio.run(read_all(
                broker.url, MEMORY_EVENTS, lambda e: e["user_id"] == user and e["kind"] == "created",
                expected=len(after)))
            assert len({e["event_id"] for e in created if e["memory_id"] == memory["id"]}) == 1

            relisted = dlq("list", "--stage", "ingest", env=env)
            assert len([d for d in relisted["dead_letters"] if d["user_id"] in (user, purged)]) == 4, \
                "a replayed record that went through made no new letter"
        finally:
            worker.stop()


def memories_of(worker: Worker, user: str) -> list[dict]:
    return asyncio.run(memories(worker.api_url, user))
