"""The embedded broker's durable storage: Tansu's `s3://` engine on moto's S3 server.

The fault tests restart the broker mid-run; that only means something if the topics survive,
which memory storage never does. These check the two premises: moto honours the conditional
PUTs Tansu relies on, and records and committed offsets outlive a broker crash.
"""
from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import OffsetAndMetadata
from botocore.exceptions import ClientError

from streams.app.topic_admin import create_topics
from streams.tools.broker import EmbeddedBroker
from streams.tools.client import make_producer
from tests.fakes.s3_server import LocalS3

pytestmark = pytest.mark.integration


def test_local_s3_honours_conditional_puts(tmp_path):
    with LocalS3(tmp_path / "s3.log") as storage:
        s3 = LocalS3.client(storage)
        first = s3.put_object(Bucket=storage.bucket, Key="k", Body=b"1", IfNoneMatch="*")
        with pytest.raises(ClientError, match="PreconditionFailed"):
            s3.put_object(Bucket=storage.bucket, Key="k", Body=b"2", IfNoneMatch="*")
        with pytest.raises(ClientError, match="PreconditionFailed"):
            s3.put_object(Bucket=storage.bucket, Key="k", Body=b"2", IfMatch='"0123456789abcdef"')
        s3.put_object(Bucket=storage.bucket, Key="k", Body=b"3", IfMatch=first["ETag"])
        assert s3.get_object(Bucket=storage.bucket, Key="k")["Body"].read() == b"3"


def test_s3_storage_keeps_records_and_committed_offsets_across_a_broker_crash(tmp_path):
    with LocalS3(tmp_path / "s3.log") as storage:
        broker = EmbeddedBroker(log_path=tmp_path / "broker.log", storage=storage).start()
        try:
            asyncio.run(create_topics(broker.url, ["kept"], 2))
            asyncio.run(_produce(broker.url, [f"before-{i}" for i in range(20)]))
            first = asyncio.run(_consume(broker.url, 8, commit=True))
            broker.restart(kill=True)
            asyncio.run(_produce(broker.url, [f"after-{i}" for i in range(5)]))
            rest = asyncio.run(_consume(broker.url, 17, commit=False))
        finally:
            broker.stop()
    produced = {f"before-{i}" for i in range(20)} | {f"after-{i}" for i in range(5)}
    assert len(first) == 8 and sorted(rest) == sorted(produced - set(first)), (first, rest)


async def _produce(url: str, values: list[str]) -> None:
    producer = make_producer(url)
    await producer.start()
    try:
        for i, value in enumerate(values):
            await producer.send_and_wait("kept", key=b"k", value=value.encode(), partition=i % 2)
    finally:
        await producer.stop()


async def _consume(url: str, count: int, commit: bool) -> list[str]:
    """`count` values of the group "g" from its committed offsets (committing them if asked)."""
    consumer = AIOKafkaConsumer("kept", bootstrap_servers=url, group_id="g", enable_auto_commit=False,
                                auto_offset_reset="earliest", max_poll_records=1)
    await consumer.start()
    out: list[str] = []
    try:
        while len(out) < count:
            for tp, records in (await consumer.getmany(timeout_ms=1000, max_records=1)).items():
                for record in records:
                    out.append(record.value.decode())
                    if commit:
                        await consumer.commit({TopicPartition(tp.topic, tp.partition):
                                               OffsetAndMetadata(record.offset + 1, "")})
    finally:
        await consumer.stop()
    return out
