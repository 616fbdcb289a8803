"""`memory.events` as any Kafka consumer sees it, over TCP from the worker: one JSON event a
record, keyed by its user, valid by the published schema, in zstd batches at the broker; and
records of the form written before still read after the upgrade (SSE live and replay, the
client's watch)."""
from __future__ import annotations

import asyncio
import json
import time

import jsonschema_rs
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from benchmarks.broker_batches import read_batches
from streams.client import AsyncMemstreamClient
from tests.integration.conftest import ADMIN_KEY, make_turn, produce, unique_user, wait_processed
from tests.legacy_events import batched_record
from topics.event_schema import SCHEMA_PATH
from topics.events import MemoryEvent
from topics.events_wire import event_value
from topics.names import MEMORY_EVENTS

pytestmark = pytest.mark.integration
TIMEOUT = 120.0


async def records_of(broker_url: str, user: str, kinds: set[str]) -> list:
    """`memory.events`' records keyed by `user`, read from the start by a plain consumer until
    one of each of `kinds` has come (a deadline, not a pause)."""
    consumer = AIOKafkaConsumer(MEMORY_EVENTS, bootstrap_servers=broker_url,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    found, deadline = [], time.monotonic() + TIMEOUT
    try:
        while not kinds <= {json.loads(r.value)["kind"] for r in found}:
            assert time.monotonic() < deadline, f"{len(found)} records of {user} only"
            batch = await consumer.getmany(timeout_ms=500)
            found += [r for records in batch.values() for r in records if r.key == user.encode()]
    finally:
        await consumer.stop()
    return found


def test_a_plain_consumer_reads_one_schema_valid_event_a_record_in_zstd_batches(worker):
    user = unique_user("wire")
    turns = [make_turn(user, "1", "I adopted a dog named Luna last year."),
             make_turn(user, "2", "I work as a nurse at the city hospital.")]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    records = asyncio.run(records_of(worker.broker_url, user, {"candidate", "created"}))

    validator = jsonschema_rs.Draft202012Validator(json.loads(SCHEMA_PATH.read_text("utf-8")),
                                                   validate_formats=True)
    values = [json.loads(r.value) for r in records]
    for value in values:
        validator.validate(value)  # one object, not an array nor a deflated batch
        assert value["user_id"] == user
    created = [v for v in values if v["kind"] == "created"]
    assert len(created) >= 2 and all(v["sealed"] and v["summary"] == "" for v in created)
    assert not any(b"Luna" in r.value for r in records), "the content travels sealed"

    [partition] = {r.partition for r in records}  # keyed by user: one partition
    offsets = sorted(r.offset for r in records)
    tp = TopicPartition(MEMORY_EVENTS, partition)
    at_broker = asyncio.run(read_batches(worker.broker_url, {tp: (offsets[0], offsets[-1] + 1)},
                                         security={}))[MEMORY_EVENTS]
    assert at_broker.compression == {"zstd"}, "the producer's compression, not in-record deflate"
    assert at_broker.records >= len(records)


def legacy_event(user: str, i: int) -> bytes:
    return event_value(MemoryEvent(
        event_id=f"old-{user}-{i}", kind="created", user_id=user, thread_id="t1",
        memory_id=f"m{i}", rev=i + 1, ts="2024-05-01T10:00:00+00:00",  # type: ignore[arg-type]
        summary=f"fact {i}", category="Personal"))


def test_records_written_before_the_upgrade_still_reach_sse_and_the_clients_watch(worker):
    user = unique_user("old")
    old = [legacy_event(user, i) for i in range(5)]
    records = [batched_record(old[:3]),  # deflated behind 0x02
               b"[" + b",".join(old[3:]) + b"]"]  # an array in clear (deflate did not shorten it)

    async def scenario() -> list[str]:
        producer = AIOKafkaProducer(bootstrap_servers=worker.broker_url)
        await producer.start()
        try:
            for record in records:
                await producer.send_and_wait(MEMORY_EVENTS, record, key=user.encode())
        finally:
            await producer.stop()
        seen: list[str] = []
        async with AsyncMemstreamClient(api_url=worker.api_url, api_key=ADMIN_KEY) as client:
            async for event in client.watch(user, replay=True):
                if isinstance(event, MemoryEvent):
                    seen.append(event.event_id)
                if len(seen) == len(old):
                    break
        return seen

    assert records[0][:1] == b"\x02"
    seen = asyncio.run(asyncio.wait_for(scenario(), TIMEOUT))
    assert seen == [f"old-{user}-{i}" for i in range(5)], "in order, each once"
