"""The Chroma sink against Chroma's persistent client (embedded, on a tmp dir) and against its own
HTTP server (`chroma run`, one per session): the same round trips as the S3 Vectors sink's
(create, update, supersede, delete, purge, replay after a crash) and the purge scan. Each test
has a collection of its own.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from sinks.base import PermanentSinkError, SinkRecord, TransientSinkError
from sinks.chroma import ChromaDestination, make_client
from sinks.chroma_layout import document_of
from sinks.routing import memory_records
from streams.settings import Settings
from tests.unit.sinks_s3.conftest import DIM, bag_of_words, memory_document
from topics.events import MemoryEvent

pytestmark = pytest.mark.integration
TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
PURGED_WORD, KEPT_WORD = "Zyxwobble", "Quorblat"

Factory = Callable[[], Any]


@pytest.fixture(params=["persistent", "http"])
def client_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Factory:
    if request.param == "http":
        url = request.getfixturevalue("chroma_url")
        return lambda: make_client(url=url)
    pytest.importorskip("chromadb", reason="chromadb is not installed: pip install -r requirements.lock")
    path = str(tmp_path / "chroma")
    return lambda: make_client(path=path)


def upsert(document: dict[str, Any]) -> SinkRecord:
    return SinkRecord(key=document["id"], op="upsert", user_id=document["user_id"], document=document)


def delete(memory_id: str, user_id: str = "ana") -> SinkRecord:
    return SinkRecord(key=memory_id, op="delete", user_id=user_id,
                      document={"id": memory_id, "type": "semantic"})


async def started(factory: Factory, collection: str | None = None, dimension: int = DIM) -> ChromaDestination:
    destination = ChromaDestination(factory, dimension=dimension,
                                    collection=collection or f"it-{uuid4().hex[:12]}")
    await destination.start()
    return destination


def stored(factory: Factory, collection: str) -> dict[str, dict[str, Any]]:
    found = factory().get_collection(collection).get(include=["metadatas", "documents", "embeddings"])
    return {i: {"metadata": m, "document": d, "embedding": [round(float(x), 5) for x in e]}
            for i, m, d, e in zip(found["ids"], found["metadatas"], found["documents"],
                                  found["embeddings"], strict=True)}


async def test_upserts_write_one_record_per_memory_and_replays_change_nothing(client_factory: Factory) -> None:
    destination = await started(client_factory)
    luna = memory_document("m1", "Ana has a dog named Luna.", category="Personal", importance=4,
                           tags=["pets"])
    porto = memory_document("m2", "Ana lives in Porto.", type="episodic")
    batch = [upsert(luna), upsert(porto)]
    assert await destination.write(batch) == []
    first = stored(client_factory, destination.collection_name)
    assert await destination.write(batch) == []
    assert stored(client_factory, destination.collection_name) == first

    assert set(first) == {"m1", "m2"}
    record = first["m1"]
    assert record["document"] == "Ana has a dog named Luna."
    assert {k: record["metadata"][k] for k in ("user_id", "type", "category", "state", "importance",
                                               "version", "tags")} == {
        "user_id": "ana", "type": "semantic", "category": "Personal", "state": "active", "importance": 4,
        "version": 1, "tags": ["pets"]}
    assert document_of(record["metadata"]) == {k: v for k, v in luna.items()
                                               if k not in ("embedding_b64", "context_b64")}
    assert record["embedding"] == [round(x, 5) for x in bag_of_words(luna["summary"], DIM)]
    collection = client_factory().get_collection(destination.collection_name)
    found = collection.query(query_embeddings=[bag_of_words("Ana's dog Luna", DIM)], n_results=1,
                             where={"$and": [{"user_id": "ana"}, {"state": "active"}]})
    assert found["ids"] == [["m1"]]
    assert collection.configuration["hnsw"]["space"] == "cosine"


async def test_an_update_and_a_supersede_replace_the_record(client_factory: Factory) -> None:
    destination = await started(client_factory)
    await destination.write([upsert(memory_document("m1", "Ana has a dog."))])
    await destination.write([upsert(memory_document("m1", "Ana has a dog named Luna.", version=2,
                                                    state="superseded"))])
    (record,) = stored(client_factory, destination.collection_name).values()
    assert record["document"] == "Ana has a dog named Luna."
    assert (record["metadata"]["version"], record["metadata"]["state"]) == (2, "superseded")


async def test_a_replay_after_a_crash_never_brings_an_older_revision_back(client_factory: Factory) -> None:
    before_crash = await started(client_factory)
    name = before_crash.collection_name
    v1 = memory_document("m1", "Ana has a dog.")
    v2 = memory_document("m1", "Ana has a dog named Luna.", version=2)
    await before_crash.write([upsert(v1)])
    await before_crash.write([upsert(v2)])
    written = stored(client_factory, name)
    after_crash = await started(client_factory, name)  # a new worker, from the last committed offset
    assert await after_crash.write([upsert(v1)]) == []
    assert stored(client_factory, name) == written
    assert await after_crash.write([upsert(v1), upsert(v2)]) == []
    assert stored(client_factory, name) == written


async def test_deletes_remove_records_and_the_last_operation_in_a_batch_wins(client_factory: Factory) -> None:
    destination = await started(client_factory)
    await destination.write([upsert(memory_document(f"m{i}", f"Fact {i}.")) for i in range(3)])
    assert await destination.write([delete("m0"), delete("never-written"), delete("m2"),
                                    upsert(memory_document("m2", "Ana likes tea."))]) == []
    found = stored(client_factory, destination.collection_name)
    assert {i: r["document"] for i, r in found.items()} == {"m1": "Fact 1.", "m2": "Ana likes tea."}


async def test_records_that_cannot_be_laid_out_are_rejected_alone(client_factory: Factory) -> None:
    destination = await started(client_factory)
    rejected = await destination.write([
        upsert(memory_document("m1", "Ana has a dog named Luna.")),
        upsert(memory_document("m2", "Ana likes tea.", dimension=512)),
        SinkRecord(key="m3", op="upsert", user_id="ana", document=memory_document("m3", "x", user_id="bo"))])
    assert [(r.record.key, r.reason) for r in rejected] == [
        ("m2", "chroma layout: the embedding has 512 dimensions; the index has 256"),
        ("m3", "chroma layout: the document's user_id is not the record's")]
    assert set(stored(client_factory, destination.collection_name)) == {"m1"}


async def test_a_collection_of_another_dimension_is_refused(client_factory: Factory) -> None:
    destination = await started(client_factory)
    await destination.write([upsert(memory_document("m1", "Ana has a dog."))])
    with pytest.raises(PermanentSinkError, match="holds 256-dimension vectors, but the embeddings have 384"):
        await started(client_factory, destination.collection_name, dimension=384)


async def test_after_a_purge_the_scan_finds_nothing_of_the_user_and_all_of_the_other(client_factory: Factory) -> None:
    destination = await started(client_factory)
    purged = [memory_document(f"p{i}", f"My parrot {PURGED_WORD} speaks {i} languages.", user_id="zed")
              for i in range(4)]
    kept = memory_document("k1", f"My parrot {KEPT_WORD} sings opera.", user_id="kim")
    await destination.write([upsert(d) for d in [*purged, kept]])
    assert await destination.user_rows("zed") == 4

    events = [MemoryEvent(event_id=f"e{d['id']}", kind="purged", user_id="zed", thread_id="t1",
                          memory_id=d["id"], rev=9, ts=TS, summary="", category="Other", meta={})
              for d in purged]
    assert await destination.write([r for e in events for r in memory_records(e, {}, {})]) == []

    assert await destination.user_rows("zed") == 0
    text = repr(stored(client_factory, destination.collection_name))
    assert PURGED_WORD not in text and "zed" not in text
    assert KEPT_WORD in text, "the other user is untouched (and the scan sees)"


async def test_a_server_that_cannot_be_reached_is_a_transient_error() -> None:
    pytest.importorskip("chromadb", reason="chromadb is not installed: pip install -r requirements.lock")
    from streams.tools.broker import free_port

    url = f"http://127.0.0.1:{free_port()}"
    destination = ChromaDestination.from_settings(Settings(memory_store="chroma", chroma_url=url,
                                                           embedder="local"))
    assert destination.dimension == 384
    with pytest.raises(TransientSinkError, match="chroma unavailable"):
        await destination.start()


async def test_a_memory_without_a_vector_is_kept_unsearchable_and_a_tombstone_removed(
        client_factory: Factory) -> None:
    """A superseded memory whose vector the index let go keeps its record (a placeholder vector,
    its state); the lifecycle's content-free tombstone is never copied."""
    destination = await started(client_factory)
    await destination.write([upsert(memory_document(f"m{i}", f"Fact {i}.")) for i in range(2)])
    superseded = {**memory_document("m0", "Fact 0.", version=2, state="superseded"), "embedding_b64": None}
    tombstone = {**memory_document("m1", "", version=2, state="purged"), "embedding_b64": None}
    assert await destination.write([upsert(superseded), upsert(tombstone)]) == []
    found = stored(client_factory, destination.collection_name)
    assert set(found) == {"m0"} and found["m0"]["metadata"]["state"] == "superseded"
    assert found["m0"]["embedding"] == [1.0] + [0.0] * (DIM - 1)


async def test_a_batch_larger_than_one_chroma_call_is_written_in_chunks(client_factory: Factory,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import sinks.chroma as chroma_module

    monkeypatch.setattr(chroma_module, "CHUNK", 3)
    destination = await started(client_factory)
    documents = [memory_document(f"m{i}", f"Fact number {i}.") for i in range(7)]
    assert await destination.write([upsert(d) for d in documents]) == []
    assert set(stored(client_factory, destination.collection_name)) == {f"m{i}" for i in range(7)}
    assert await destination.write([delete(f"m{i}") for i in range(5)]) == []
    assert set(stored(client_factory, destination.collection_name)) == {"m5", "m6"}
