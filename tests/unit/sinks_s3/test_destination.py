"""S3VectorsDestination against a backend (moto + QueryVectors fake, or the real service)."""
from __future__ import annotations

import pytest

from sinks.base import PermanentSinkError, SinkRecord
from sinks.s3vectors import S3VectorsDestination
from sinks.s3vectors_client import StoredVector, VectorsValidationError
from sinks.s3vectors_layout import (
    MAX_FILTERABLE_BYTES,
    document_of,
    filterable_part,
    metadata_bytes,
    vector_key,
)
from tests.unit.sinks_s3.conftest import DIM, Backend, bag_of_words, memory_document


def upsert(document: dict) -> SinkRecord:
    return SinkRecord(key=document["id"], op="upsert", user_id=document["user_id"], document=document)


def delete(memory_id: str, user_id: str = "ana", memory_type: str | None = "semantic") -> SinkRecord:
    return SinkRecord(key=memory_id, op="delete", user_id=user_id,
                      document={"id": memory_id, "type": memory_type})


async def started(backend: Backend, **settings: object) -> tuple[S3VectorsDestination, str]:
    index = backend.new_index()
    destination = S3VectorsDestination(backend.settings(index, **settings), client=backend.client(index))
    await destination.start()
    return destination, index


def stored(backend: Backend, index: str) -> dict[str, StoredVector]:
    return {v.key: v for v in backend.client(index).list_vectors(return_data=True)}


async def test_start_creates_the_index_with_value_json_non_filterable(backend: Backend) -> None:
    destination, index = await started(backend)
    info = backend.client(index).describe_index()
    assert info is not None and (info.dimension, info.distance) == (DIM, "cosine")
    assert set(info.non_filterable_keys or ()) == {"value_json", "namespace"}
    await destination.start()  # an existing index that fits is accepted


async def test_start_refuses_an_index_of_another_dimension_or_distance(backend: Backend) -> None:
    _, index = await started(backend)
    other_dimension = S3VectorsDestination(backend.settings(index, bedrock_embed_dimensions=512),
                                           client=backend.client(index))
    with pytest.raises(PermanentSinkError, match="has dimension 256, but the embeddings have 512"):
        await other_dimension.start()
    other_distance = S3VectorsDestination(backend.settings(index, s3v_distance="euclidean"),
                                          client=backend.client(index))
    with pytest.raises(PermanentSinkError, match="measures cosine distance, but S3V_DISTANCE is euclidean"):
        await other_distance.start()


async def test_start_refuses_an_index_where_value_json_is_filterable(backend: Backend) -> None:
    index = backend.new_index()
    client = backend.client_in_bucket(index)
    client.create_index(dimension=DIM, distance="cosine", non_filterable_keys=["other"])
    with pytest.raises(PermanentSinkError, match="without value_json, namespace as non-filterable"):
        await S3VectorsDestination(backend.settings(index), client=client).start()


async def test_upserts_write_the_layout_and_replays_change_nothing(backend: Backend) -> None:
    destination, index = await started(backend)
    luna = memory_document("m1", "Ana has a dog named Luna.", category="Personal", importance=4)
    porto = memory_document("m2", "Ana lives in Porto.", type="episodic")
    batch = [upsert(luna), upsert(porto)]

    assert await destination.write(batch) == []
    first = stored(backend, index)
    assert await destination.write(batch) == []  # at-least-once: the same records again

    assert stored(backend, index) == first
    assert set(first) == {vector_key(("ana", "semantic"), "m1"), vector_key(("ana", "episodic"), "m2")}
    vector = first[vector_key(("ana", "semantic"), "m1")]
    assert document_of(vector) == luna
    assert vector.metadata["category"] == "Personal" and vector.metadata["is_indexed"] is True


async def test_an_update_replaces_the_vector(backend: Backend) -> None:
    destination, index = await started(backend)
    await destination.write([upsert(memory_document("m1", "Ana has a dog."))])
    newer = memory_document("m1", "Ana has a dog named Luna.", version=2, state="superseded")
    await destination.write([upsert(newer)])

    (vector,) = stored(backend, index).values()
    assert document_of(vector) == newer
    assert vector.metadata["is_indexed"] is False


async def test_deletes_remove_vectors_with_or_without_a_type(backend: Backend) -> None:
    destination, index = await started(backend)
    await destination.write([upsert(memory_document(f"m{i}", f"Fact {i}.")) for i in range(3)])

    assert await destination.write([delete("m0"), delete("m1", memory_type=None),
                                    delete("never-written")]) == []
    assert set(stored(backend, index)) == {vector_key(("ana", "semantic"), "m2")}


async def test_the_last_operation_on_a_memory_in_a_batch_wins(backend: Backend) -> None:
    destination, index = await started(backend)
    luna = memory_document("m1", "Ana has a dog named Luna.")
    await destination.write([upsert(luna), delete("m1"), upsert(memory_document("m2", "x")),
                             delete("m2"), upsert(memory_document("m2", "Ana likes tea."))])
    assert {document_of(v)["summary"] for v in stored(backend, index).values()} == {"Ana likes tea."}


async def test_a_large_document_still_writes(backend: Backend) -> None:
    destination, index = await started(backend)
    big = memory_document(
        "m1", "Ana " + "really " * 600 + "likes dogs.", category="Personal",
        tags=[f"tag-{i:03d}" for i in range(300)], entities=[f"entity {i}" for i in range(400)],
        source_turn_ids=[f"thread-1:turn-{i}" for i in range(500)])

    assert await destination.write([upsert(big)]) == []
    (vector,) = stored(backend, index).values()
    assert document_of(vector) == big
    assert metadata_bytes(filterable_part(vector.metadata)) <= MAX_FILTERABLE_BYTES


async def test_the_service_refuses_filterable_metadata_over_2kb(backend: Backend) -> None:
    """Why the layout cuts: the same document with its whole summary filterable is refused."""
    _, index = await started(backend)
    client = backend.client(index)
    vector = StoredVector("k1", {"ns_0": "ana", "summary": "really " * 600}, bag_of_words("dog", DIM))
    with pytest.raises(VectorsValidationError):
        client.put_vectors([vector])


async def test_records_that_cannot_be_laid_out_are_rejected_alone(backend: Backend) -> None:
    destination, index = await started(backend)
    good = memory_document("m1", "Ana has a dog named Luna.")
    wrong_dimension = memory_document("m2", "Ana likes tea.", dimension=512)
    no_embedding = {**memory_document("m3", "Ana likes coffee."), "embedding_b64": None}
    someone_else = memory_document("m4", "Bo likes jazz.", user_id="bo")
    records = [upsert(good), upsert(wrong_dimension), upsert(no_embedding),
               SinkRecord(key="m4", op="upsert", user_id="ana", document=someone_else)]

    rejected = await destination.write(records)

    assert [(r.record.key, r.reason) for r in rejected] == [
        ("m2", "s3vectors layout: the embedding has 512 dimensions; the index has 256"),
        ("m3", "s3vectors layout: the memory has no embedding_b64"),
        ("m4", "s3vectors layout: the document's user_id is not the record's"),
    ]
    assert set(stored(backend, index)) == {vector_key(("ana", "semantic"), "m1")}


async def test_writes_to_a_missing_index_fail_permanently(backend: Backend) -> None:
    index = backend.new_index()
    client = backend.client_in_bucket(index)
    destination = S3VectorsDestination(backend.settings(index), client=client)
    with pytest.raises(PermanentSinkError, match="NotFoundException"):
        await destination.write([upsert(memory_document("m1", "Ana has a dog."))])
