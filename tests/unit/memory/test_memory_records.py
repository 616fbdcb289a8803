"""A memory's document and audit list live in one table value (`streams.memory.memory_records`):
one write per change, and tables written before (a bare document in `memories`, its list in
`audit`) are read, then rewritten as one record on their next change."""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

import pytest

from streams.app.inprocess import InProcessPipeline
from streams.memory.memory_records import (OMITTED, MemoryRecords, document_of, is_memory_record,
                                           memory_record)
from streams.memory.model import Memory
from streams.pipeline.records import Record
from streams.privacy.sealed import SealedTable, user_in_value
from streams.settings import Settings
from topics import names
from topics.commands import Command
from topics.turns import Turn

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
USER = "ana"
DOC = {"id": "m1", "user_id": USER, "summary": "Ana has a dog."}
ENTRY = {"id": "e1", "memory_id": "m1", "user_id": USER, "verb": "ADD"}
MARKER = {"id": "e2", "memory_id": "topic:1", "user_id": USER, "verb": "BLOCK_TOPIC"}


# --- the views -----------------------------------------------------------------------------
def test_a_document_and_its_audit_list_are_one_value():
    raw: dict[str, Any] = {}
    records = MemoryRecords(raw)
    records.docs["m1"] = DOC
    records.audit["m1"] = [ENTRY]
    assert raw == {"m1": memory_record(DOC, [ENTRY])}
    assert records.docs["m1"] == DOC and records.audit["m1"] == [ENTRY]
    records.docs["m1"] = {**DOC, "summary": "Ana has two dogs."}
    assert records.audit["m1"] == [ENTRY], "writing the document keeps the audit list"


def test_an_audit_list_without_a_document_is_not_a_memory():
    """A purged memory's tombstone, a blocked topic's marker: audited, not memories."""
    records = MemoryRecords({})
    records.audit["topic:1"] = [MARKER]
    records.docs["m1"] = DOC
    assert list(records.docs) == ["m1"] and "topic:1" not in records.docs
    assert sorted(records.audit) == ["topic:1"], "m1 has no audit list yet"
    with pytest.raises(KeyError):
        records.docs["topic:1"]


def test_removing_a_document_keeps_its_audit_list():
    raw: dict[str, Any] = {}
    records = MemoryRecords(raw)
    records.docs["m1"], records.audit["m1"] = DOC, [ENTRY]
    assert records.docs.pop("m1") == DOC
    assert "m1" not in records.docs and records.audit["m1"] == [ENTRY]
    del records.audit["m1"]
    assert raw == {}, "neither left: the key goes"


def test_values_written_before_are_read_and_rewritten_as_one_record():
    raw, legacy = {"m1": DOC}, {"m1": [ENTRY], "topic:1": [MARKER]}
    records = MemoryRecords(raw, legacy_audit=legacy)
    assert records.docs["m1"] == DOC and records.audit["m1"] == [ENTRY]
    assert sorted(records.audit) == ["m1", "topic:1"] and list(records.docs) == ["m1"]
    records.audit["m1"] = [ENTRY, {**ENTRY, "id": "e3"}]
    assert raw["m1"] == memory_record(DOC, [ENTRY, {**ENTRY, "id": "e3"}])
    assert legacy["m1"] == [ENTRY], "the old table is only read"
    records.audit["topic:1"] = [MARKER, {**MARKER, "id": "e4"}]
    assert records.audit["topic:1"][-1]["id"] == "e4" and "topic:1" not in records.docs
    records.docs.pop("m1")
    del records.audit["m1"]
    assert "m1" not in raw and "m1" not in legacy, "the old list does not show through"


def full_document(**fields: Any) -> dict[str, Any]:
    return Memory(id="m1", user_id=USER, type="semantic", summary="Ana has a dog.", created_at=T0,
                  updated_at=T0, last_accessed=T0, **fields).model_dump(mode="json")


def test_a_document_with_every_field_is_stored_without_those_at_their_usual_value():
    raw: dict[str, Any] = {}
    records = MemoryRecords(raw)
    doc = full_document(valence="positive", tags=["pet"], importance=4)
    records.docs["m1"], records.audit["m1"] = doc, [ENTRY]
    stored = raw["m1"]["memory"]
    assert raw["m1"]["$record"] == 2 and is_memory_record(raw["m1"])
    assert {"valence", "tags", "importance", "summary"} <= stored.keys()
    assert not {"superseded_by", "purge_at", "relations", "pinned", "trust_score"} & stored.keys()
    assert records.docs["m1"] == doc and records.read("m1") == (doc, [ENTRY])
    assert document_of(raw["m1"]) == doc
    records.docs["m1"]["related_ids"].append("m2")
    assert records.docs["m1"]["related_ids"] == [], "each read its own lists"


def test_a_field_of_another_json_type_than_its_usual_value_is_kept():
    raw: dict[str, Any] = {}
    records = MemoryRecords(raw)
    doc = {**full_document(), "access_count": False, "version": 1.0}
    records.docs["m1"] = doc
    assert raw["m1"]["memory"]["access_count"] is False and "version" in raw["m1"]["memory"]
    assert records.docs["m1"] == doc and records.docs["m1"]["access_count"] is False


def test_a_full_document_stored_as_it_is_before_reads_the_same():
    doc = full_document(valence="positive")
    records = MemoryRecords({"m1": {"$record": 1, "user_id": USER, "memory": doc, "audit": [ENTRY]}})
    assert records.docs["m1"] == doc and records.audit["m1"] == [ENTRY]


def test_what_a_compact_document_leaves_out_is_what_the_model_defaults_to():
    """`OMITTED` is part of the stored format: if a default of the model changes, the records
    written before must still read as they were written (a new format, not a new default)."""
    defaults = {name: field.get_default(call_default_factory=True)
                for name, field in Memory.model_fields.items() if not field.is_required()}
    assert OMITTED == defaults


# --- in the stages -------------------------------------------------------------------------
def turn(turn_id: str, text: str) -> Turn:
    return Turn(user_id=USER, thread_id="t", turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts=T0)


async def command(pipeline: InProcessPipeline, cmd: Command) -> str:
    record = Record(names.MEMORY_COMMANDS, 0, 0, cmd.user_id.encode(),
                    cmd.model_dump_json().encode(), time.time())
    return await pipeline.commands_stage.handle(record)


def opened(pipeline: InProcessPipeline, name: str) -> SealedTable:
    """A raw table of the pipeline, its values opened."""
    return SealedTable(pipeline.raw_tables[name], pipeline.sealed.sealer, user_in_value)


@pytest.fixture
def pipeline(tmp_path, minilm_embedder) -> InProcessPipeline:
    return InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)


async def test_a_change_is_one_value_and_the_audit_table_is_not_written(pipeline):
    await pipeline.ingest([turn("1", "I adopted a dog named Luna."),
                           turn("2", "I work as a nurse at the city hospital.")])
    memories = pipeline.store.user_memories(USER)
    assert len(memories) == 2
    stored = dict(opened(pipeline, "memories").items())
    assert sorted(stored) == sorted(m.id for m in memories)
    for memory in memories:
        record = stored[memory.id]
        assert is_memory_record(record) and record["memory"]["summary"] == memory.summary
        assert [e["verb"] for e in record["audit"]][0] == "ADD"
        assert pipeline.tables.audit[memory.id] == record["audit"]
    assert pipeline.raw_tables["audit"] == {}


async def test_tables_written_before_are_served_and_change_on(pipeline):
    """The form before: the document alone in `memories`, its audit list in `audit`."""
    await pipeline.ingest([turn("1", "I adopted a dog named Luna.")])
    memories, audit = opened(pipeline, "memories"), opened(pipeline, "audit")
    (memory_id, record), = memories.items()
    memories[memory_id], audit[memory_id] = record["memory"], record["audit"]
    pipeline.store.mark_stale()
    before = pipeline.store.user_memories(USER)
    assert [m.summary for m in before] == ["Ana adopted a dog named Luna."]
    assert pipeline.tables.audit[memory_id] == record["audit"]

    cmd = Command(command_id="c1", kind="pin", user_id=USER, memory_id=memory_id, ts=T0)
    assert await command(pipeline, cmd) == "applied"
    now = memories[memory_id]
    assert is_memory_record(now) and now["memory"]["pinned"]
    assert [e["verb"] for e in now["audit"]] == ["ADD", "UPDATE"], "the old list, then the new entry"
    assert pipeline.tables.audit[memory_id] == now["audit"]
