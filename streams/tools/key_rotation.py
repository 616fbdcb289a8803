"""`memstream keys rotate` against Kafka: every user's data key in the `user_keys` changelog
re-wrapped under the new master key (`streams.privacy.rotation` decides the records; module doc
there), with the workers stopped.

An operator's run over the topics, like `streams.tools.unseal`, so it may use the app's Kafka
plumbing (`streams.kafka.security`, `streams.kafka.highwaters`) that the privacy package,
below the app, does not.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streams.kafka.highwaters import true_end_offsets
from streams.errors import MemstreamError
from streams.privacy.crypto import MasterKeys
from streams.privacy.rotation import Latest, RotationReport, rotate_records


class WorkersRunning(MemstreamError):
    """The app's consumer group has members: stop the workers before a rotation."""



async def rotate_changelog(bootstrap: str, topic: str, masters: MasterKeys, group: str,
                           check_group: bool = True) -> RotationReport:
    """Re-wrap every key of the `user_keys` changelog `topic` under `masters.current` (module
    doc). Raises `WorkersRunning` while the consumer group `group` has members, unless not
    `check_group` (the operator knows the workers are stopped: the embedded broker keeps a
    group's members listed after they left)."""
    if check_group and await group_members(bootstrap, group):
        raise WorkersRunning(f"the consumer group {group!r} has members: stop every worker first")
    writes, report = rotate_records(await latest_records(bootstrap, topic), masters)
    if writes:
        await write_records(bootstrap, topic, writes)
    return report


def _security() -> dict[str, Any]:
    """The Kafka connection arguments of the settings (TLS, SASL: streams.kafka.security)."""
    from streams.kafka.security import client_kwargs
    from streams.settings import get_settings

    return client_kwargs(get_settings().kafka)


async def group_members(bootstrap: str, group: str) -> int:
    """How many members the consumer group has."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="memstream-keys",
                                **_security())
    await admin.start()
    try:
        responses = await admin.describe_consumer_groups([group])
    finally:
        await admin.close()
    return sum(len(g[-1]) for response in responses for g in response.groups)


async def latest_records(bootstrap: str, topic: str) -> Latest:
    """The latest value of every (partition, key) of `topic`, read from its start to its end."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                **_security())
    await consumer.start()
    try:
        await consumer.topics()
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not tps:
            return {}
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await true_end_offsets(consumer, tps)
        latest: Latest = {}
        while any([await consumer.position(tp) < end for tp, end in ends.items()]):
            for tp, records in (await consumer.getmany(*tps, timeout_ms=1000)).items():
                for record in records:
                    latest[(tp.partition, record.key or b"")] = record.value
        return latest
    finally:
        await consumer.stop()


async def write_records(bootstrap: str, topic: str, writes: Mapping[tuple[int, bytes], Any]) -> None:
    """Write each record to its own partition, acknowledged by every replica."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", client_id="memstream-keys",
                                **_security())
    await producer.start()
    try:
        sent = [await producer.send(topic, value=value, key=key, partition=partition)
                for (partition, key), value in writes.items()]
        for delivery in sent:
            await delivery  # raises if the broker did not take it
    finally:
        await producer.stop()
