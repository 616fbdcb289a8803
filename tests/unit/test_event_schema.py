"""`memory.events`' published JSON Schema (topics/schemas/memory-event.schema.json): checked in,
generated from `MemoryEvent`, and what the writer puts on the topic (`topics.events_wire`).
Validated with jsonschema-rs (schemathesis's), a validator that knows nothing of memstream."""
from __future__ import annotations

import json

import jsonschema_rs
import pytest

from streams.app.inprocess import InProcessPipeline
from streams.settings import Settings
from topics import names
from topics.event_schema import SCHEMA_PATH, schema_text
from topics.events import MemoryEvent
from topics.events_wire import event_value


def test_the_checked_in_schema_is_the_one_the_model_makes():
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "topics/schemas/memory-event.schema.json is out of date: "
        "python -m topics.event_schema > topics/schemas/memory-event.schema.json")


@pytest.fixture(scope="module")
def validator() -> jsonschema_rs.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema_rs.meta.validate(schema)
    return jsonschema_rs.Draft202012Validator(schema, validate_formats=True)


class NoEmbedder:  # nothing here embeds
    dim = 384


def event(kind: str = "created", summary: str = "Ana adopted a dog named Luna.",
          meta: dict | None = None) -> MemoryEvent:
    return MemoryEvent(event_id=f"e-{kind}", kind=kind, user_id="ana", thread_id="t1",  # type: ignore[arg-type]
                       memory_id="m1", rev=3, ts="2024-05-01T10:00:00+02:00",  # type: ignore[arg-type]
                       summary=summary, category="Personal",
                       meta={"type": "semantic"} if meta is None else meta)


async def test_what_the_writer_sends_is_valid_with_its_content_sealed(tmp_path, validator):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), NoEmbedder())  # type: ignore[arg-type]
    await pipeline.outputs.event(event())
    await pipeline.outputs.event(event("purged", summary="", meta={}))
    created, purged = pipeline.topics.sent[names.MEMORY_EVENTS]

    assert created.key == purged.key == b"ana"
    for record in (created, purged):
        value = json.loads(record.value)
        validator.validate(value)
        assert isinstance(value, dict), "one event a record"
    value = json.loads(created.value)
    assert (value["summary"], value["meta"]) == ("", {}), "sealed: empty on the topic"
    assert value["sealed"]["user_id"] == "ana" and "Luna" not in created.value.decode()
    assert json.loads(purged.value)["sealed"] is None, "no content, nothing sealed"


def test_records_of_the_form_before_are_not_what_the_schema_describes(validator):
    assert not validator.is_valid(json.loads(b"[" + event_value(event()) + b"]")), "an array"
    assert not validator.is_valid({**json.loads(event_value(event())), "kind": "forgotten"})
