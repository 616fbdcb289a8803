"""Master-key rotation: every user's data key re-wrapped under a new master key.

The data keys themselves do not change (so nothing sealed with them is touched); only their
wrapping in the `user_keys` table does. The table's truth is its changelog topic
(`<APP_ID>-user_keys-changelog`): `rotate_changelog` reads the latest record of every user,
re-wraps each key that is not wrapped by the new master key yet, and writes the record again to
the same partition, after the old one. A worker recovering the table then holds only keys the
new master key unwraps.

It runs with the workers stopped (`WorkersRunning` while the app's consumer group lists members;
the embedded broker, Tansu, never drops a member that left, so there the operator says so): a
running worker keeps its own
copy of the table, and may write a user's record (a shred!) between the read and the write here,
which the rotation would then undo. The workers are started again with `NEW,OLD` as master keys
(`streams.privacy.crypto.decode_keys`: the first wraps, each unwraps), so a key still wrapped by
the old one (a rotation stopped half-way) and a command sealed in transit with it still open;
once the rotation has run to the end and those commands are consumed, `NEW` alone. The steps are
in docs/privacy.md.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streams.app.highwaters import true_end_offsets
from streams.errors import MemstreamError
from streams.privacy.crypto import MasterKeys, SealError
from streams.privacy.user_keys import rewrapped

Latest = dict[tuple[int, bytes], bytes | None]
"""The latest value of every (partition, key) of a topic (None: a tombstone)."""


class WorkersRunning(MemstreamError):
    """The app's consumer group has members: stop the workers before a rotation."""


class UnwrappableKeys(MemstreamError):
    """Some users' keys open with none of the accepted master keys: nothing was written."""


@dataclass(frozen=True)
class RotationReport:
    """What a rotation found: keys re-wrapped now, keys wrapped by the new master key already,
    and users without a key (purged)."""

    rewrapped: int
    current: int
    without_key: int


def rotate_records(latest: Latest, masters: MasterKeys) -> tuple[Latest, RotationReport]:
    """The records to write so that every key in `latest` is wrapped by `masters.current`, and
    the report. Raises `UnwrappableKeys` (before anything is written) when a key opens with none
    of `masters.accepted`: rotating the rest and dropping the old master key would lose those
    users' data."""
    writes: Latest = {}
    current = without_key = unwrappable = 0
    for (partition, key), value in latest.items():
        record = json.loads(value) if value else None
        if not isinstance(record, dict) or not record.get("key"):
            without_key += 1
            continue
        try:
            changed = rewrapped(masters, key.decode("utf-8"), record)
        except SealError:
            unwrappable += 1
            continue
        if changed is None:
            current += 1
        else:
            writes[(partition, key)] = json.dumps(changed).encode("utf-8")
    if unwrappable:
        raise UnwrappableKeys(f"{unwrappable} users' keys open with none of the master keys given")
    return writes, RotationReport(len(writes), current, without_key)


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
    """The Kafka connection arguments of the settings (TLS, SASL: streams.app.kafka_security)."""
    from streams.app.kafka_security import client_kwargs
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
