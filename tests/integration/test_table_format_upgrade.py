"""A worker upgraded over tables written in the forms before recovers and serves them.

Until issue 22 a sealed table value was the JSON `Sealed` envelope (its ciphertext in base64),
written by Faust's JSON serializer; then a binary envelope (`b"\\x01"`) that Faust stores as it
is; now a binary one whose JSON is deflated before it is sealed (`b"\\x02"`,
`streams/privacy/table_values.py`). Until then too a memory's document was the `memories`
value and its audit list the `audit` value; now both are one memory record in `memories`
(`streams/memory/memory_records.py`), and each candidate's `applied` record had a key of its
own, now in its turn's value (`streams/memory/applied_by_turn.py`). This test makes a user's memories with a worker, rewrites
every sealed table's changelog records of that user in the old forms, by turns (the same keys
and values, sealed again with the user's key; each memory record split into the two tables),
and starts a worker on a fresh data directory: it rebuilds its tables from the changelogs
alone, serves the same memories and their histories, and goes on writing.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import orjson
import pytest
from faust.serializers import codecs

from streams.app.topic_admin import create_topics
from streams.app.topology import ALL_TOPICS
from streams.memory.applied_by_turn import legacy_candidate_key
from streams.memory.memory_records import document_of, is_memory_record
from streams.privacy import table_values
from streams.privacy.placement import partition_for
from streams.privacy.crypto import decode_key
from streams.privacy.sealed import TABLE_OWNERS
from streams.tools.broker import EmbeddedBroker
from streams.tools.client import make_producer
from streams.tools.unseal import TopicUnsealer, changelog_topic, read_records
from tests.integration.conftest import (
    MASTER_KEY,
    NO_LIFECYCLE,
    PARTITIONS,
    Worker,
    call,
    make_turn,
    memories,
    produce,
    unique_user,
    wait_processed,
)
from topics.sealed import Sealed

pytestmark = pytest.mark.integration
APP_ID = "memstream-upgrade"


def old_forms(table: str, key: bytes, value: bytes,
              unsealer: TopicUnsealer) -> list[tuple[str, bytes, bytes | None]]:
    """A table value as the (table, key, JSON) a version before wrote (None: the key deleted):
    a memory record as its document in `memories` and its audit list in `audit`; the `applied`
    records of a turn each under its candidate's key, the turn's key deleted."""
    plaintext = unsealer.sealer.open_stored(table_values.unpack(value))
    record = orjson.loads(plaintext)
    if table == "memories" and is_memory_record(record):
        split = [("audit", key, orjson.dumps(record["audit"]))]
        document = document_of(record)
        return [("memories", key, orjson.dumps(document)), *split] if document else split
    if table == "applied" and isinstance(record, dict) and "$turn" in record:
        user_id = orjson.loads(key)[0]
        return [*(("applied", legacy_candidate_key(user_id, cid).encode(), orjson.dumps(one))
                  for cid, one in record["candidates"].items()), ("applied", key, None)]
    return [(table, key, plaintext)]


def old_form(user_id: str, plaintext: bytes, unsealer: TopicUnsealer, as_json: bool) -> bytes:
    """A table value's JSON sealed again with the user's key as a version before did: the
    `Sealed` envelope as JSON (`as_json`), else the binary envelope of the JSON as it is."""
    keys = unsealer.sealer.keys
    if not as_json:
        return table_values.pack(user_id, keys.seal_raw(user_id, plaintext))
    envelope = Sealed(user_id=user_id, sealed=keys.seal(user_id, plaintext))
    return codecs.dumps("json", envelope.model_dump())


async def rewrite_in_old_forms(broker_url: str, user_id: str) -> Counter:
    """Append an old form of every deflated value of the sealed tables' changelogs (all the
    user's, on the user's partition), JSON and binary by turns, each memory record as its two
    values of before and each turn's `applied` records under their candidates' keys; return how
many of each form, of the audit lists split off and of the turns split."""
    unsealer = TopicUnsealer(broker_url, APP_ID, decode_key(MASTER_KEY))
    await unsealer.refresh()
    producer = make_producer(broker_url, one_record_batches=True)
    await producer.start()
    rewritten: Counter = Counter()
    try:
        for table in TABLE_OWNERS:
            for key, value in await read_records(broker_url, changelog_topic(APP_ID, table)):
                if not value or not table_values.unpack(value).compressed:
                    continue
                for old_table, old_key, plaintext in old_forms(table, key, value, unsealer):
                    as_json = sum(rewritten.values()) % 2 == 0
                    await producer.send_and_wait(
                        changelog_topic(APP_ID, old_table), key=old_key,
                        value=None if plaintext is None else old_form(user_id, plaintext, unsealer, as_json),
                        partition=partition_for(user_id, PARTITIONS))
                    if plaintext is None:
                        rewritten["turns split"] += 1
                        continue
                    rewritten["json" if as_json else "binary"] += 1
                    rewritten["audit lists"] += old_table == "audit"
    finally:
        await producer.stop()
    return rewritten


async def histories(api_url: str, user_id: str, memory_ids: list[str]) -> dict[str, list]:
    """Each memory's audit trail as the API serves it (verb and id of each entry)."""
    out = {}
    for memory_id in memory_ids:
        status, body = await call(api_url, "GET", f"/v1/users/{user_id}/memories/{memory_id}/history")
        assert status == 200, body
        out[memory_id] = [(e["verb"], e["id"]) for e in body["history"]]
    return out


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
            trails = asyncio.run(histories(worker.api_url, user, [m["id"] for m in before]))
        finally:
            worker.stop()
        assert before, "the turns made memories"
        rewritten = asyncio.run(rewrite_in_old_forms(broker.url, user))
        assert rewritten["json"] + rewritten["binary"] >= len(before) and min(rewritten.values())
        assert rewritten["audit lists"] >= len(before), "each memory's audit list split off"
        assert rewritten["turns split"] >= 2, "each turn's applied records under their keys of before"

        worker = Worker(broker.url, tmp_path / "after", APP_ID, tmp_path / "after.log",
                        env=NO_LIFECYCLE).start()
        try:
            assert served(asyncio.run(memories(worker.api_url, user))) == served(before)
            assert asyncio.run(histories(worker.api_url, user, list(trails))) == trails
            assert all(trails.values()), "every memory has its history"
            more = [make_turn(user, "3", "My sister Maria lives in Porto.")]
            asyncio.run(produce(broker.url, more))
            asyncio.run(wait_processed(broker.url, more))
            assert len(asyncio.run(memories(worker.api_url, user))) > len(before), "and writes on"
        finally:
            worker.stop()
