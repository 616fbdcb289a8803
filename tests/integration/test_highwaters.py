"""End offsets after multi-record batches, on the embedded broker.

Tansu answers ListOffsets with the last batch's base offset + 1; `true_end_offsets` checks the
answer against a fetch. Faust's table recovery reads changelogs up to these offsets, so a low
answer means tables recovered without their last writes (or a ConsistencyError).
"""
from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.kafka.highwaters import true_end_offsets
from streams.app.topic_admin import create_topics
from streams.tools.broker import EmbeddedBroker
from streams.tools.client import make_producer

pytestmark = pytest.mark.integration


async def _produce_batches(url: str, topic: str, batches: list[int]) -> None:
    """Produce batches of the given sizes to partition 0, each batch sent as one request."""
    producer = make_producer(url)
    await producer.start()
    try:
        for size in batches:
            batch = producer.create_batch()
            for i in range(size):
                assert batch.append(key=b"k", value=b"v%d" % i, timestamp=None) is not None
            batch.close()
            await (await producer.send_batch(batch, topic, partition=0))
    finally:
        await producer.stop()


async def _ends(url: str, topic: str, partitions: int) -> tuple[dict, dict]:
    consumer = AIOKafkaConsumer(bootstrap_servers=url, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return await consumer.end_offsets(tps), await true_end_offsets(consumer, tps)
    finally:
        await consumer.stop()


def test_end_offsets_after_multi_record_batches_are_the_true_ones(tmp_path):
    with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
        asyncio.run(create_topics(broker.url, ["batched"], 2))
        asyncio.run(_produce_batches(broker.url, "batched", [5, 3, 4]))
        reported, true = asyncio.run(_ends(broker.url, "batched", 2))
    p0, p1 = TopicPartition("batched", 0), TopicPartition("batched", 1)
    assert true == {p0: 12, p1: 0}
    # What the check is for: the broker's own answer is the last batch's base + 1 (if a Tansu
    # release fixes that, this line tells us the check can go).
    assert reported[p0] in (9, 12)
