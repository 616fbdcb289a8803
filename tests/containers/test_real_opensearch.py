"""The OpenSearch sink against a real OpenSearch: directly, and end to end from a worker on a
real Kafka. tests/integration/test_opensearch_sink.py runs the same checks on osmem-server."""
from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Iterable

import pytest
from opensearchpy import AsyncOpenSearch

from sinks.opensearch import OpenSearchDestination, records_for_event
from tests.containers.conftest import start_worker
from tests.integration.conftest import Worker, make_turn, produce, read_all, unique_user, wait_processed
from tests.integration.test_opensearch_sink import T0, committed_to_end, entry, event, ids
from topics.names import MEMORY_EVENTS


def test_events_and_audit_are_written_by_id_and_a_replay_changes_nothing(opensearch_url: str):
    prefix = f"tc{uuid.uuid4().hex[:8]}"
    created = event("created", "m1", 0, similarity=0.42, reason="new", source_turn_id="t1:0")
    superseded = event("superseded", "m1", 5)
    audit = {"m1": [entry(created, "ADD", None, "Luna is 3."),
                    entry(superseded, "SUPERSEDE", "Luna is 3.", "Luna is 4.")]}

    async def scenario() -> None:
        dest = OpenSearchDestination(opensearch_url, prefix=prefix)
        await dest.start()
        try:
            records = [r for ev in (created, superseded) for r in records_for_event(ev, audit, {})]
            assert await dest.write(records) == []
            first = await ids(dest.client, f"{prefix}-events-*", "ana")
            assert await dest.write(records) == [], "a replay is accepted"
            assert await ids(dest.client, f"{prefix}-events-*", "ana") == first
            assert set(first) == {created.event_id, superseded.event_id}
            changes = await dest.what_changed("ana", T0, T0 + timedelta(hours=1))
            assert [(c["verb"], c["new"]["summary"]) for c in changes] == [
                ("ADD", "Luna is 3."), ("SUPERSEDE", "Luna is 4.")]
        finally:
            await dest.close()

    asyncio.run(scenario())


@pytest.fixture(scope="module")
def sink_worker(kafka_url: str, opensearch_url: str,
                tmp_path_factory: pytest.TempPathFactory) -> Iterable[tuple[Worker, str]]:
    workdir: Path = tmp_path_factory.mktemp("opensearch-worker")
    prefix = f"tce2e{uuid.uuid4().hex[:6]}"
    w = start_worker(kafka_url, workdir, "memstream-tc-sinks", OPENSEARCH_URL=opensearch_url,
                     OPENSEARCH_INDEX_PREFIX=prefix, SINK_BATCH_MAX_AGE_MS="50")
    try:
        yield w, prefix
    finally:
        w.stop()


def test_a_worker_on_real_kafka_sinks_its_events_to_real_opensearch(sink_worker, opensearch_url: str):
    worker, prefix = sink_worker
    user = unique_user("tc-os")
    turns = [make_turn(user, "1", "I adopted a dog named Luna last year.")]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    # The event is in the log before we wait for the sink to have committed up to its end.
    created = asyncio.run(read_all(worker.broker_url, MEMORY_EVENTS,
                                   lambda e: e["user_id"] == user and e["kind"] == "created", 1))
    asyncio.run(committed_to_end(worker.broker_url, worker.app_id))

    async def stored() -> dict:
        client = AsyncOpenSearch(hosts=[opensearch_url])
        try:
            return await ids(client, f"{prefix}-events-*", user)
        finally:
            await client.close()

    events = asyncio.run(stored())
    assert {e["event_id"] for e in created} <= set(events)
