"""What the embedded broker's object store deletes (`streams.tools.object_purge`): the batches
every committing group has read, never a changelog's or an unread partition's, with the real
Tansu reading what is left."""
from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from streams.app.topic_admin import create_topics
from streams.tools.broker import DiskStorage, EmbeddedBroker
from streams.tools.object_purge import purgeable
from streams.tools.object_store import DATABASE

TURNS, CHANGELOG, DLQ = "chat.turns", "memstream-memories-changelog", "chat.turns.dlq"
GUARD_S = 120.0
"""A guard against a hang, never a measure."""


def test_only_batches_wholly_below_the_floor_and_outside_the_kept_tail_go():
    bases = [0, 10, 20, 30, 40]
    assert purgeable(bases, floor=25, keep=1) == [0, 10]  # 20 holds 25: kept
    assert purgeable(bases, floor=30, keep=1) == [0, 10, 20]
    assert purgeable(bases, floor=30, keep=4) == [0]
    assert purgeable(bases, floor=0, keep=0) == []
    assert purgeable(bases, floor=10**9, keep=0) == [0, 10, 20, 30]  # the last batch stays


def batch_objects(directory: Path, topic: str) -> int:
    db = sqlite3.connect(f"file:{directory / DATABASE}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT count(*) FROM objects WHERE key GLOB ?",
                              (f"clusters/*/topics/{topic}/partitions/*/records/*.batch",)).fetchone()[0])
    finally:
        db.close()


async def produce_batches(url: str, topic: str, count: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=url)
    await producer.start()
    try:
        for n in range(count):  # one send awaited at a time: one batch object each
            await producer.send_and_wait(topic, f"record {n}".encode(), key=b"u", partition=0)
    finally:
        await producer.stop()


async def read_from(url: str, topic: str, group: str | None, until: int,
                    commit_at: int | None = None) -> list[int]:
    """Offsets read on partition 0 (from the group's committed offset, or the earliest) until
    offset `until` is read; with `commit_at`, commit that offset."""
    consumer = AIOKafkaConsumer(bootstrap_servers=url, group_id=group, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        read: list[int] = []
        async with asyncio.timeout(GUARD_S):
            while not read or read[-1] < until:
                got = await consumer.getmany(tp, timeout_ms=1000)
                read.extend(record.offset for record in got.get(tp, []))
        if commit_at is not None:
            await consumer.commit({tp: commit_at})
        return read
    finally:
        await consumer.stop()


@pytest.mark.asyncio
async def test_read_batches_are_deleted_and_the_rest_still_read_through_tansu(tmp_path: Path):
    storage = DiskStorage(tmp_path / "broker", tmp_path / "store.log", purge_interval=0.2, keep_batches=5)
    with EmbeddedBroker(log_path=tmp_path / "broker.log", storage=storage) as broker:
        await create_topics(broker.url, [TURNS, CHANGELOG, DLQ], partitions=1)
        for topic in (TURNS, CHANGELOG, DLQ):
            await produce_batches(broker.url, topic, 30)
        assert (await read_from(broker.url, TURNS, "worker", until=19, commit_at=20))[:20] == list(range(20))
        await read_from(broker.url, TURNS, "sink", until=24, commit_at=25)
        await read_from(broker.url, CHANGELOG, None, until=29)  # a recovery: it commits nothing
        deadline = time.monotonic() + GUARD_S
        while batch_objects(storage.directory, TURNS) > 10 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        # the slower group ("worker", at 20) bounds what goes: batches 0-19
        assert batch_objects(storage.directory, TURNS) == 10
        assert batch_objects(storage.directory, CHANGELOG) == 30
        assert batch_objects(storage.directory, DLQ) == 30
        assert await read_from(broker.url, TURNS, "worker", until=29) == list(range(20, 30))
        assert await read_from(broker.url, TURNS, None, until=29) == list(range(20, 30))  # a late reader
        await produce_batches(broker.url, TURNS, 1)  # the partition still takes writes at its end
        assert (await read_from(broker.url, TURNS, "worker", until=30))[-1] == 30
