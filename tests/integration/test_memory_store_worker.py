"""End to end: a worker started with MEMORY_STORE=pgvector,chroma mirrors the memories it makes
from real turns to PostgreSQL (pgvector) and to a Chroma server; LangGraph's PostgresStore
finds them; a user purge through the API leaves nothing of the user in either store (the purge
scan), and the other user's memories are still there."""
from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sinks.chroma import make_client
from sinks.pgvector_layout import user_prefixes
from streams.app.topic_admin import create_topics
from streams.app.topology import ALL_TOPICS
from topics.names import MEMORY_EVENTS
from streams.tools.broker import EmbeddedBroker
from tests.integration.conftest import (
    PARTITIONS,
    Worker,
    call,
    make_turn,
    produce,
    read_all,
    unique_user,
    wait_processed,
)
from tests.integration.test_opensearch_sink import committed_to_end
from tests.integration.test_pgvector_sink import reader_conninfo
from tests.integration.vector_servers import new_schema

pytestmark = pytest.mark.integration
PURGED_WORD, KEPT_WORD = "Zyxwobble", "Quorblat"


@pytest.fixture(scope="module")
def store_worker(postgres_url: str, chroma_url: str, tmp_path_factory) -> Iterable[tuple[Worker, str, str]]:
    workdir: Path = tmp_path_factory.mktemp("memory-store")
    broker = EmbeddedBroker(log_path=workdir / "broker.log").start()
    asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
    schema, collection = new_schema(), f"e2e-{uuid.uuid4().hex[:8]}"
    worker = Worker(broker.url, workdir / "data", "memstream-stores", workdir / "worker.log", env={
        "MEMORY_STORE": "pgvector,chroma", "PGVECTOR_URL": postgres_url, "PGVECTOR_SCHEMA": schema,
        "CHROMA_URL": chroma_url, "CHROMA_COLLECTION": collection, "SINK_BATCH_MAX_AGE_MS": "50",
        "EMBEDDER": "local"})
    worker.start()
    try:
        yield worker, schema, collection
    finally:
        worker.kill()  # a throwaway worker: a clean stop only spends ~15 s closing RocksDB
        broker.stop()


def pg_text(url: str, schema: str) -> tuple[list[tuple[str, str, dict[str, Any]]], str]:
    """The store's rows, and both tables whole as text (the purge scan)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(f'SELECT prefix, key, value FROM "{schema}".store').fetchall()
        vectors = conn.execute(f'SELECT prefix, key FROM "{schema}".store_vectors').fetchall()
    return rows, json.dumps([rows, vectors], default=str)


def chroma_records(url: str, collection: str) -> dict[str, Any]:
    found = make_client(url=url).get_collection(collection).get(include=["metadatas", "documents"])
    return dict(zip(found["ids"], zip(found["documents"], found["metadatas"], strict=True), strict=True))


def test_a_worker_mirrors_memories_to_pgvector_and_chroma_and_a_purge_leaves_nothing(
        store_worker, postgres_url: str, chroma_url: str, minilm_embedder: Any) -> None:
    from langgraph.store.postgres import PostgresStore

    worker, schema, collection = store_worker
    purged, kept = unique_user("purged"), unique_user("kept")
    turns = [make_turn(purged, "1", f"My parrot {PURGED_WORD} speaks three languages."),
             make_turn(kept, "1", f"My parrot {KEPT_WORD} sings opera every morning."),
             make_turn(kept, "2", "I work as a nurse at the children's hospital in Lisbon.")]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    asyncio.run(committed_to_end(worker.broker_url, worker.app_id))

    rows, text = pg_text(postgres_url, schema)
    by_user = {p: [v for q, _, v in rows if q == p] for p in {q for q, *_ in rows}}
    assert PURGED_WORD in text and KEPT_WORD in text
    assert any(prefix in by_user for prefix in user_prefixes(purged))
    records = chroma_records(chroma_url, collection)
    assert {m["user_id"] for _, m in records.values()} == {purged, kept}
    assert {key for _, key, _ in rows} == set(records), "the same memories in both"

    index = {"dims": 384, "fields": ["summary"],
             "embed": lambda texts: minilm_embedder.embed(list(texts)).tolist()}
    with PostgresStore.from_conn_string(reader_conninfo(postgres_url, schema), index=index) as store:
        found = store.search((kept,), query="Where does the user work?", limit=1)
        assert found and "nurse" in found[0].value["summary"]

    status, body = asyncio.run(call(worker.api_url, "DELETE", f"/v1/users/{purged}?wait=1"))
    assert status == 200, body
    # The purge's `purged` events must be in the log before "committed to the end" means
    # anything: the end read first could be the one before them.
    purged_ids = {e["event_id"] for c in body["commands"] for e in c["events"]}
    assert purged_ids
    asyncio.run(read_all(worker.broker_url, MEMORY_EVENTS,
                         lambda e: e.get("event_id") in purged_ids, len(purged_ids)))
    asyncio.run(committed_to_end(worker.broker_url, worker.app_id))

    rows, text = pg_text(postgres_url, schema)
    assert PURGED_WORD not in text and purged not in text, "the purge scan of pgvector"
    assert KEPT_WORD in text, "the other user is untouched (and the scan sees)"
    records = chroma_records(chroma_url, collection)
    chroma_text = json.dumps(records)
    assert PURGED_WORD not in chroma_text and purged not in chroma_text, "the purge scan of Chroma"
    assert KEPT_WORD in chroma_text
