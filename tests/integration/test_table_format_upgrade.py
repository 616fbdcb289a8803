"""A worker upgraded over tables written before the binary sealed values recovers and serves them.

Until issue 22 a sealed table value was the JSON `Sealed` envelope (its ciphertext in base64),
written by Faust's JSON serializer; now it is a binary envelope that Faust stores as it is
(`streams/privacy/table_values.py`). This test makes a user's memories with a worker, rewrites
every sealed table's changelog records of that user in the old form (the same keys, values and
ciphertexts, only the envelope differs), and starts a worker on a fresh data directory: it
rebuilds its tables from the changelogs alone, serves the same memories and goes on writing.
"""
from __future__ import annotations

import asyncio
import base64
from collections import Counter
from pathlib import Path

import pytest
from faust.serializers import codecs

from streams.app.topic_admin import create_topics
from streams.app.topology import ALL_TOPICS
from streams.privacy import table_values
from streams.privacy.placement import partition_for
from streams.privacy.sealed import TABLE_OWNERS
from streams.tools.broker import EmbeddedBroker
from streams.tools.client import make_producer
from streams.tools.unseal import changelog_topic, read_records
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
from topics.sealed import Sealed

pytestmark = pytest.mark.integration
APP_ID = "memstream-upgrade"


def old_form(value: bytes) -> bytes:
    """A binary table value as the version before wrote it: the `Sealed` envelope as JSON."""
    stored = table_values.unpack(value)
    envelope = Sealed(user_id=stored.user_id, by=stored.by,
                      sealed=base64.urlsafe_b64encode(stored.sealed).decode("ascii"))
    return codecs.dumps("json", envelope.model_dump())


async def rewrite_in_old_form(broker_url: str, user_id: str) -> int:
    """Append the old form of every binary value of the sealed tables' changelogs (all the
    user's, on the user's partition); return how many."""
    producer = make_producer(broker_url, one_record_batches=True)
    await producer.start()
    rewritten = 0
    try:
        for table in TABLE_OWNERS:
            topic = changelog_topic(APP_ID, table)
            for key, value in await read_records(broker_url, topic):
                if value and value[:1] == table_values.FORMAT:
                    await producer.send_and_wait(topic, key=key, value=old_form(value),
                                                 partition=partition_for(user_id, PARTITIONS))
                    rewritten += 1
    finally:
        await producer.stop()
    return rewritten


def served(items: list[dict]) -> Counter:
    return Counter((m["id"], m["summary"], m["state"]) for m in items)


def test_a_worker_upgraded_over_tables_in_the_old_form_serves_them(tmp_path: Path) -> None:
    with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        user = unique_user("upgrade")
        turns = [make_turn(user, "1", "I adopted a dog named Luna last year."),
                 make_turn(user, "2", "I work as a nurse at the city hospital.")]
        worker = Worker(broker.url, tmp_path / "before", APP_ID, tmp_path / "before.log",
                        env=NO_LIFECYCLE).start()
        try:
            asyncio.run(produce(broker.url, turns))
            asyncio.run(wait_processed(broker.url, turns))
            before = asyncio.run(memories(worker.api_url, user))
        finally:
            worker.stop()
        assert before, "the turns made memories"
        assert asyncio.run(rewrite_in_old_form(broker.url, user)) >= len(before)

        worker = Worker(broker.url, tmp_path / "after", APP_ID, tmp_path / "after.log",
                        env=NO_LIFECYCLE).start()
        try:
            assert served(asyncio.run(memories(worker.api_url, user))) == served(before)
            more = [make_turn(user, "3", "My sister Maria lives in Porto.")]
            asyncio.run(produce(broker.url, more))
            asyncio.run(wait_processed(broker.url, more))
            assert len(asyncio.run(memories(worker.api_url, user))) > len(before), "and writes on"
        finally:
            worker.stop()
