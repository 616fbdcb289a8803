"""Seed 002's layout: keys, namespace metadata, the 2 KB filterable budget, value_json, the inverse."""
from __future__ import annotations

import json
from uuid import NAMESPACE_URL, uuid5

import pytest

from sinks.s3vectors_client import StoredVector
from sinks.s3vectors_layout import (
    FLATTENED_FIELDS,
    MAX_FILTERABLE_BYTES,
    LayoutError,
    build_metadata,
    document_of,
    filterable_part,
    item_of,
    memory_delete_keys,
    memory_vector,
    metadata_bytes,
    vector_key,
)
from tests.unit.sinks_s3.conftest import DIM, memory_document

STAMP = "2023-05-08T13:56:00Z"


def test_vector_key_is_seed_002s_uuid5() -> None:
    assert vector_key(("ana", "semantic"), "m1") == str(uuid5(NAMESPACE_URL, "ana|semantic::m1"))
    assert vector_key(("ana", "semantic"), "m1") == vector_key(["ana", "semantic"], "m1")
    assert vector_key(("ana", "semantic"), "m1") != vector_key(("ana", "episodic"), "m1")


@pytest.mark.parametrize("namespace", [(), ("ana", ""), ("a|b", "semantic"), ("a::b",), ("x",) * 17])
def test_namespaces_that_could_collide_are_refused(namespace: tuple[str, ...]) -> None:
    with pytest.raises(LayoutError):
        vector_key(namespace, "m1")


def test_memory_metadata_is_seed_002s_layout() -> None:
    document = memory_document("m1", "Ana has a dog named Luna.", category="Personal", importance=4,
                               tags=["pet"], pinned=True)
    vector = memory_vector(document, DIM)

    assert vector.key == vector_key(("ana", "semantic"), "m1")
    meta = vector.metadata
    assert {k: meta[k] for k in ("ns_0", "ns_1", "ns_depth", "doc_key", "is_indexed")} == {
        "ns_0": "ana", "ns_1": "semantic", "ns_depth": 2, "doc_key": "m1", "is_indexed": True}
    assert meta["namespace"] == ["ana", "semantic"]
    assert (meta["created_at"], meta["updated_at"]) == (document["created_at"], document["updated_at"])
    assert {k: meta[k] for k in ("user_id", "type", "category", "importance", "pinned", "tags", "summary")} == {
        "user_id": "ana", "type": "semantic", "category": "Personal", "importance": 4,
        "pinned": True, "tags": ["pet"], "summary": "Ana has a dog named Luna."}
    assert json.loads(meta["value_json"]) == {k: v for k, v in document.items() if k not in ("embedding_b64", "context_b64")}
    assert len(vector.data or ()) == DIM


def test_inactive_memories_are_not_searchable() -> None:
    document = memory_document("m1", "Ana lives in Porto.", state="superseded")
    assert memory_vector(document, DIM).metadata["is_indexed"] is False


def test_document_round_trips_with_its_embedding() -> None:
    document = memory_document("m1", "Ana has a dog named Luna.", tags=["pet"], related_ids=["m0"])
    vector = memory_vector(document, DIM)
    assert document_of(vector) == document
    assert "embedding_b64" not in document_of(StoredVector(vector.key, vector.metadata))


def test_a_large_document_keeps_everything_in_value_json_and_2kb_filterable() -> None:
    document = memory_document(
        "m1", "Ana " + "really " * 600 + "likes dogs.", category="Personal",
        tags=[f"tag-{i:03d}" for i in range(300)], entities=[f"entity {i}" for i in range(400)],
        source_turn_ids=[f"thread-1:turn-{i}" for i in range(500)])
    vector = memory_vector(document, DIM)

    filterable = filterable_part(vector.metadata)
    assert metadata_bytes(filterable) <= MAX_FILTERABLE_BYTES
    # The documented order: short fields whole; tags keep their head; summary is cut last.
    assert filterable["category"] == "Personal"
    assert filterable["tags"] == document["tags"][:len(filterable["tags"])]
    assert 0 < len(filterable["tags"]) < 300
    assert document["summary"].startswith(filterable.get("summary", ""))
    assert document_of(vector) == document


def test_fields_fill_the_budget_in_priority_order() -> None:
    value = {"tags": ["x" * 1000, "y" * 1000, "z" * 10], "summary": "s" * 3000, "category": "Goals"}
    meta = build_metadata(("ana", "semantic"), "m1", value, created_at=STAMP, updated_at=STAMP,
                          is_indexed=True)
    assert FLATTENED_FIELDS.index("tags") < FLATTENED_FIELDS.index("summary")
    assert meta["category"] == "Goals"
    assert meta["tags"] == ["x" * 1000]         # the second tag would pass 2 KB: the head only
    assert 0 < len(meta["summary"]) < 3000       # cut to what is left
    assert metadata_bytes(filterable_part(meta)) <= MAX_FILTERABLE_BYTES
    assert json.loads(meta["value_json"]) == value


@pytest.mark.parametrize(("change", "reason"), [
    ({"embedding_b64": None}, "no embedding_b64"),
    ({"embedding_b64": "not base64!"}, "not base64"),
    ({"type": "opinion"}, "unknown memory type"),
    ({"id": ""}, "non-empty string"),
    ({"user_id": ""}, "non-empty strings"),
    ({"created_at": None}, "no created_at"),
    ({"entities": ["x" * 1000] * 50}, "40960 at most"),
])
def test_records_that_cannot_be_laid_out_are_named(change: dict, reason: str) -> None:
    document = {**memory_document("m1", "Ana has a dog."), **change}
    with pytest.raises(LayoutError, match=reason):
        memory_vector(document, DIM)


def test_a_wrong_dimension_is_refused() -> None:
    with pytest.raises(LayoutError, match="has 256 dimensions; the index has 1024"):
        memory_vector(memory_document("m1", "Ana has a dog."), 1024)


def test_a_delete_without_type_covers_every_type() -> None:
    keys = memory_delete_keys("ana", "m1", None)
    assert vector_key(("ana", "semantic"), "m1") in keys
    assert vector_key(("ana", "episodic"), "m1") in keys
    assert memory_delete_keys("ana", "m1", "episodic") == [vector_key(("ana", "episodic"), "m1")]


def test_item_of_reads_a_langgraph_item() -> None:
    meta = build_metadata(("docs", "ana", "notes"), "n1", {"summary": "hi"}, created_at=STAMP,
                          updated_at="2023-05-09T10:00:00+00:00", is_indexed=False)
    item = item_of(meta)
    assert (item.namespace, item.key, item.value) == (("docs", "ana", "notes"), "n1", {"summary": "hi"})
    assert item.updated_at.isoformat() == "2023-05-09T10:00:00+00:00"
    assert meta["ns_2"] == "notes" and meta["ns_depth"] == 3


def test_the_days_a_memory_mentions_are_filterable() -> None:
    document = memory_document("m1", "Ana painted a lake sunrise on 7 May 2022.", type="episodic",
                               event_start="2022-05-07", event_end="2022-05-07")
    meta = memory_vector(document, DIM).metadata
    assert (meta["event_start"], meta["event_end"]) == ("2022-05-07", "2022-05-07")


def test_the_context_vector_stays_out_of_the_bucket() -> None:
    document = {**memory_document("m1", "Ana likes tea."), "context_b64": "h:AAAA"}
    vector = memory_vector(document, DIM)
    assert "context_b64" not in json.loads(vector.metadata["value_json"])
    assert document_of(StoredVector(vector.key, vector.metadata))["context_b64"] is None
