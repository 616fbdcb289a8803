"""The OpenSearch sink against a real `osmem-server` process over HTTP, and end to end through an
embedded broker and a worker started with OPENSEARCH_URL."""
from __future__ import annotations

import asyncio
import json
import time
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from opensearchpy import AsyncOpenSearch
from osmem_server import OsmemServer

from sinks.base import SinkRecord, TransientSinkError
from sinks.opensearch import OpenSearchDestination, records_for_event
from sinks.runner import RunnerConfig, SinkRunner
from streams.kafka.highwaters import true_end_offsets
from streams.tools.broker import EmbeddedBroker, free_port
from streams.app.topic_admin import create_topics
from tests.integration.conftest import (
    PARTITIONS,
    Worker,
    make_turn,
    produce,
    read_all,
    unique_user,
    wait_processed,
)
from topics.events import MemoryEvent
from streams.app.topology import ALL_TOPICS
from topics.names import MEMORY_EVENTS
from topics.sinks_dlq import SinkDeadLetter

pytestmark = pytest.mark.integration

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def osmem() -> Iterable[str]:
    """osmem-server on a free port; ready once its cluster health answers green."""
    server = OsmemServer.start(addr=f"127.0.0.1:{free_port()}", japanese=False)
    try:
        with urllib.request.urlopen(f"{server.url}/_cluster/health", timeout=10) as response:
            assert json.load(response)["status"] == "green"
        yield server.url
    finally:
        server.close()


def run(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro_fn())


def event(kind: str, memory_id: str, minute: int, user: str = "ana", **meta: Any) -> MemoryEvent:
    return MemoryEvent(event_id=f"{memory_id}-{kind}-{minute}", kind=kind, user_id=user,  # type: ignore[arg-type]
                       thread_id="t1", memory_id=memory_id, rev=minute,
                       ts=T0 + timedelta(minutes=minute), summary=f"{user} {kind} {memory_id}",
                       category="Personal", meta={"type": "semantic", **meta})


def entry(ev: MemoryEvent, verb: str, old: str | None, new: str | None) -> dict[str, Any]:
    value = lambda s: None if s is None else {"summary": s, "state": "active", "pinned": False,  # noqa: E731
                                              "importance": 3, "category": "Personal"}
    return {"id": ev.event_id, "memory_id": ev.memory_id, "user_id": ev.user_id, "verb": verb,
            "actor": "system", "ts": ev.ts.isoformat(), "rev": ev.rev, "thread_id": ev.thread_id,
            "old": value(old), "new": value(new), "meta": {}}


async def ids(client: AsyncOpenSearch, index: str, user: str) -> dict[str, dict]:
    await client.indices.refresh(index=index, allow_no_indices=True, ignore_unavailable=True)
    found = await client.search(index=index, body={"query": {"term": {"user_id": user}}, "size": 1000},
                                ignore_unavailable=True, allow_no_indices=True)
    return {h["_id"]: h["_source"] for h in found["hits"]["hits"]}


def test_events_and_audit_land_by_deterministic_id_and_replays_change_nothing(osmem):
    prefix = f"t{uuid.uuid4().hex[:8]}"
    created = event("created", "m1", 0, similarity=0.42, reason="new", source_turn_id="t1:0")
    updated = event("superseded", "m1", 5)
    other = event("created", "m2", 7)
    audit = {"m1": [entry(created, "ADD", None, "Luna is 3."), entry(updated, "SUPERSEDE", "Luna is 3.", "Luna is 4.")],
             "m2": [entry(other, "ADD", None, "Ana plays the cello.")]}

    async def scenario() -> None:
        dest = OpenSearchDestination(osmem, prefix=prefix)
        await dest.start()
        records = [r for ev in (created, updated, other) for r in records_for_event(ev, audit, {})]
        assert await dest.write(records) == []
        assert await dest.write(records) == [], "a replay is accepted"
        events = await ids(dest.client, f"{prefix}-events-*", "ana")
        audits = await ids(dest.client, f"{prefix}-audit-*", "ana")
        assert set(events) == {created.event_id, updated.event_id, other.event_id}
        assert set(audits) == {created.event_id, updated.event_id, other.event_id}
        doc = events[created.event_id]
        assert (doc["op"], doc["node"], doc["status"], doc["sim"]) == ("create", "hotpath", "ok", 0.42)
        mapping = await dest.client.indices.get_mapping(index=f"{prefix}-events-2024.05")
        assert mapping[f"{prefix}-events-2024.05"]["mappings"]["dynamic"] == "strict"

        changes = await dest.what_changed("ana", T0, T0 + timedelta(hours=1))
        assert [(c["memory_id"], c["verb"]) for c in changes] == [("m1", "ADD"), ("m1", "SUPERSEDE"), ("m2", "ADD")]
        assert changes[1]["old"]["summary"] == "Luna is 3." and changes[1]["new"]["summary"] == "Luna is 4."
        only_m1 = await dest.what_changed("ana", T0, T0 + timedelta(hours=1), memory_id="m1")
        assert [c["verb"] for c in only_m1] == ["ADD", "SUPERSEDE"]
        window = await dest.what_changed("ana", T0 + timedelta(minutes=1), T0 + timedelta(minutes=6))
        assert [c["verb"] for c in window] == ["SUPERSEDE"]
        assert await dest.what_changed("bob", T0, T0 + timedelta(hours=1)) == []
        await dest.close()

    run(scenario)


def test_a_document_the_mapping_refuses_is_rejected_and_the_rest_written(osmem):
    prefix = f"t{uuid.uuid4().hex[:8]}"
    good = records_for_event(event("created", "m1", 0), {}, {})[0]
    bad = SinkRecord(key="events:bad", op="upsert", user_id="ana",
                     document={**good.document, "event_id": "bad", "surprise": 1})

    async def scenario() -> list:
        dest = OpenSearchDestination(osmem, prefix=prefix)
        await dest.start()
        rejected = await dest.write([good, bad])
        assert set(await ids(dest.client, f"{prefix}-events-*", "ana")) == {good.document["event_id"]}
        await dest.close()
        return rejected

    [rejected] = run(scenario)
    assert rejected.record is bad
    assert rejected.reason.startswith("400 strict_dynamic_mapping_exception")


def test_through_the_runner_a_refused_record_reaches_the_dead_letter_path(osmem):
    prefix = f"t{uuid.uuid4().hex[:8]}"
    good = records_for_event(event("created", "m1", 0), {}, {})[0]
    bad = SinkRecord(key="events:bad", op="upsert", user_id="ana",
                     document={**good.document, "event_id": "bad", "rev": "not a number"})
    letters: list[SinkDeadLetter] = []

    async def dead_letter(letter: SinkDeadLetter) -> None:
        letters.append(letter)

    async def scenario() -> None:
        runner = SinkRunner(OpenSearchDestination(osmem, prefix=prefix), dead_letter, RunnerConfig())
        await runner.start()
        await runner.submit(good)
        await runner.submit(bad)
        await runner.stop()

    run(scenario)
    [letter] = letters
    assert (letter.sink, letter.key) == ("opensearch", "events:bad")
    assert letter.reason.startswith("400 mapper_parsing_exception")


def test_a_purge_leaves_only_content_free_tombstones_of_that_user(osmem):
    prefix = f"t{uuid.uuid4().hex[:8]}"
    created = event("created", "m1", 0)
    bob = event("created", "m9", 0, user="bob")
    purged = MemoryEvent(event_id="m1-purged", kind="purged", user_id="ana", thread_id="t1",
                         memory_id="m1", rev=9, ts=T0 + timedelta(minutes=9), summary="",
                         category="", meta={})
    tombstone = {**entry(purged, "PURGE", None, None), "actor": "user"}
    before = {"m1": [entry(created, "ADD", None, "Ana lives in Lisbon.")],
              "m9": [entry(bob, "ADD", None, "Bob lives in Porto.")]}

    async def scenario() -> None:
        dest = OpenSearchDestination(osmem, prefix=prefix)
        await dest.start()
        first = [*records_for_event(created, before, {}), *records_for_event(bob, before, {})]
        # The purge lands in the same batch as the writes it removes: order is kept.
        assert await dest.write([*first, *records_for_event(purged, {"m1": [tombstone]}, {})]) == []
        events = await ids(dest.client, f"{prefix}-events-*", "ana")
        audits = await ids(dest.client, f"{prefix}-audit-*", "ana")
        assert list(events) == ["m1-purged"] and list(audits) == ["m1-purged"]
        assert events["m1-purged"]["tombstone"] and events["m1-purged"]["summary"] is None
        assert audits["m1-purged"]["old"] is None and audits["m1-purged"]["new"] is None
        text = json.dumps([events, audits])
        assert "Lisbon" not in text
        assert set(await ids(dest.client, f"{prefix}-events-*", "bob")) == {bob.event_id}
        await dest.close()

    run(scenario)


def test_an_unreachable_opensearch_is_a_transient_error():
    async def scenario() -> None:
        dest = OpenSearchDestination(f"http://127.0.0.1:{free_port()}", timeout=2)
        with pytest.raises(TransientSinkError):
            await dest.write(records_for_event(event("created", "m1", 0), {}, {}))
        with pytest.raises(TransientSinkError):
            await dest.start()
        await dest.close()

    run(scenario)


# --- end to end: broker + worker with OPENSEARCH_URL ------------------------------------------

async def committed_to_end(broker_url: str, group: str, timeout: float = 90.0) -> dict[int, int]:
    """Wait until the worker's group has committed `memory.events` to its end on every partition.

    The sink agent acks an event only once its documents are written, so this is the moment
    everything produced so far is in OpenSearch.
    """
    consumer = AIOKafkaConsumer(bootstrap_servers=broker_url, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    tps = [TopicPartition(MEMORY_EVENTS, p) for p in range(PARTITIONS)]
    deadline = time.monotonic() + timeout
    try:
        while True:
            ends = await true_end_offsets(consumer, tps)
            committed = {tp.partition: (await consumer.committed(tp)) or 0 for tp in tps}
            if all(committed[tp.partition] >= ends[tp] for tp in tps):
                return {tp.partition: ends[tp] for tp in tps}
            if time.monotonic() > deadline:
                raise AssertionError(f"memory.events committed {committed}, end {ends}")
            await asyncio.sleep(0.25)
    finally:
        await consumer.stop()


@pytest.fixture(scope="module")
def sink_worker(osmem, tmp_path_factory) -> Iterable[tuple[Worker, str]]:
    workdir: Path = tmp_path_factory.mktemp("sinks")
    broker = EmbeddedBroker(log_path=workdir / "broker.log").start()
    asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
    prefix = f"e2e{uuid.uuid4().hex[:6]}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENSEARCH_URL", osmem)
        mp.setenv("OPENSEARCH_INDEX_PREFIX", prefix)
        mp.setenv("SINK_BATCH_MAX_AGE_MS", "50")
        worker = Worker(broker.url, workdir / "data", "memstream-sinks", workdir / "worker.log").start()
    try:
        yield worker, prefix
    finally:
        worker.kill()  # a throwaway worker: a clean stop only spends ~15 s closing RocksDB
        broker.stop()


def test_a_worker_sinks_events_and_audit_to_opensearch_and_a_replay_adds_nothing(sink_worker, osmem):
    worker, prefix = sink_worker
    user = unique_user("os")
    turns = [make_turn(user, "1", "I adopted a dog named Luna last year."),
             make_turn(user, "2", "I work as a nurse at the children's hospital in Lisbon.")]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))

    def created_events(expected: int) -> list[dict]:
        return asyncio.run(read_all(worker.broker_url, MEMORY_EVENTS,
                                    lambda e: e["user_id"] == user and e["kind"] == "created", expected))

    # The events are in the log before we wait for the sink to have committed up to its end.
    created = created_events(2)
    ends = asyncio.run(committed_to_end(worker.broker_url, worker.app_id))
    memory_ids = {e["memory_id"] for e in created}

    async def stored() -> tuple[dict, dict]:
        client = AsyncOpenSearch(hosts=[osmem])
        try:
            return (await ids(client, f"{prefix}-events-*", user),
                    await ids(client, f"{prefix}-audit-*", user))
        finally:
            await client.close()

    events, audits = asyncio.run(stored())
    assert {e["event_id"] for e in created} <= set(events)
    assert {e["kind"] for e in events.values()} >= {"candidate", "created"}
    assert {e["memory_id"] for e in events.values() if e["kind"] == "created"} == set(memory_ids)
    assert all(doc["event_id"] == _id for _id, doc in events.items()), "_id is the event id"
    adds = [a for a in audits.values() if a["verb"] == "ADD"]
    assert {a["memory_id"] for a in adds} == set(memory_ids)
    assert all(a["id"] in events for a in adds), "an ADD entry's id is its event's id"

    # Replay: the same turns again. The worker re-sends identical events, the sink rewrites them.
    # A sentinel turn on the same key follows; once it is through, the replayed turns are through
    # ingest. It is skipped there, so it says nothing of the dedup stage: the re-sent `created`
    # events are awaited on the log too, whichever stage is the slower.
    sentinel = make_turn(user, "sentinel", "Hi there!")
    asyncio.run(produce(worker.broker_url, [*turns, sentinel]))
    asyncio.run(wait_processed(worker.broker_url, [sentinel]))
    created_events(2 * len(created))
    replayed = asyncio.run(committed_to_end(worker.broker_url, worker.app_id))
    # (records, not events: a record holds a user's events of one batch)
    assert sum(replayed.values()) > sum(ends.values()), "the replay re-sent events, all sunk"
    again, audits_again = asyncio.run(stored())
    assert again == events and audits_again == audits
