"""The pgvector and Chroma layouts as pure functions (the servers' round trips are in
tests/integration/test_pgvector_sink.py and test_chroma_sink.py)."""
from __future__ import annotations

import json
from datetime import datetime

import pytest

from sinks.chroma_layout import chroma_record, document_of
from sinks.pgvector_layout import (
    LayoutError,
    memory_row,
    prefix,
    user_label,
    user_prefixes,
    vector_text,
)
from tests.unit.sinks_s3.conftest import DIM, bag_of_words, memory_document


def test_a_user_label_never_has_a_dot_and_two_users_never_share_one() -> None:
    assert user_label("ana") == "ana"
    assert user_label("ana.silva") == "ana%2Esilva"
    assert user_label("ana%2Esilva") == "ana%252Esilva", "an id that looks escaped stays distinct"
    assert prefix("ana.silva", "episodic") == "ana%2Esilva.episodic"
    assert user_prefixes("bo", "semantic") == ["bo.semantic"]
    assert user_prefixes("bo") == ["bo.semantic", "bo.episodic", "bo.procedural", "bo.insight",
                                   "bo.consolidated"], "a delete without a type: every type"


def test_an_active_memory_is_a_row_and_a_vector() -> None:
    document = memory_document("m1", "Ana has a dog named Luna.", category="Personal", version=3)
    row = memory_row("ana", document, DIM)
    assert (row.prefix, row.key, row.version) == ("ana.semantic", "m1", 3)
    assert row.created_at == datetime.fromisoformat(document["created_at"])
    assert "embedding_b64" not in row.value and row.value["summary"] == "Ana has a dog named Luna."
    assert row.embedding is not None and len(row.embedding) == DIM
    assert "ana.semantic" not in row.other_prefixes and "ana.episodic" in row.other_prefixes
    assert json.loads(vector_text([0.5, -1.0])) == [0.5, -1.0]


def test_a_memory_that_is_not_active_has_no_vector() -> None:
    for state in ("superseded", "soft_deleted", "archived"):
        assert memory_row("ana", memory_document("m1", "x", state=state), DIM).embedding is None


@pytest.mark.parametrize(("change", "reason"), [
    ({"user_id": "bo"}, "the document's user_id is not the record's"),
    ({"type": "opinion"}, "unknown memory type"),
    ({"version": "2"}, "the memory's version is not an integer"),
    ({"embedding_b64": None}, "the memory has no embedding_b64"),
])
def test_what_cannot_be_laid_out_says_why(change: dict, reason: str) -> None:
    document = {**memory_document("m1", "Ana has a dog."), **change}
    with pytest.raises(LayoutError, match=reason):
        memory_row("ana", document, DIM)


def test_a_chroma_record_keeps_what_readers_filter_on_and_the_whole_document() -> None:
    document = memory_document("m1", "Ana has a dog named Luna.", category="Personal", tags=[], version=2)
    record = chroma_record("ana", document, DIM)
    assert (record.id, record.document, record.version) == ("m1", "Ana has a dog named Luna.", 2)
    assert record.metadata["user_id"] == "ana" and record.metadata["category"] == "Personal"
    assert "tags" not in record.metadata, "Chroma refuses an empty list"
    assert all(v is not None for v in record.metadata.values())
    assert document_of(record.metadata) == {k: v for k, v in document.items()
                                            if k not in ("embedding_b64", "context_b64")}
    assert record.embedding == pytest.approx(bag_of_words("Ana has a dog named Luna.", DIM), abs=1e-6)
