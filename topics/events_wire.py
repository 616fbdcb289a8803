"""`memory.events` on the wire: the one place its records are written (`event_value`) and read
(`events_of`); every writer and reader of the topic goes through these two.

A record is one `MemoryEvent`, keyed by its user's id (UTF-8), its value the event's JSON as the
published JSON Schema describes it (`topics/schemas/memory-event.schema.json`, generated from
the model by `topics.event_schema`). Any Kafka consumer reads it as it reads any JSON topic: a
Kafka Connect sink with the JSON converter, ksqlDB's `VALUE_FORMAT='JSON'`, a Java or Go
client. The bytes are cut by the producer's compression (KAFKA_PRODUCER_COMPRESSION, zstd by
default), which every Kafka client undoes by itself.

The content of an event, `summary` and `meta`, travels sealed for its user in `sealed`
(`streams.privacy.payloads.seal_event`): on the wire `summary` is "" and `meta` {}; the
envelope (ids, kind, revision, time, category) is in clear. memstream's own consumers open it; a
consumer with the master key can too (`streams/tools/unseal.py`); nobody else can, by design.

Records written before one event a record (issue 50) held one user's events of a stage batch as
a JSON array, in clear or deflated behind the byte 0x02 (`topics.deflated`); `events_of` still
reads them, so a topic that holds both forms reads whole after an upgrade
(docs/decisions.md#one-event-a-record).
"""
from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from topics.deflated import inflated
from topics.events import MemoryEvent

_EVENT_LIST = TypeAdapter(list[MemoryEvent])


def event_value(event: MemoryEvent) -> bytes:
    """The record value of `event`: its JSON (its content already sealed, when it has any)."""
    return event.model_dump_json().encode()


def events_of(value: bytes | str | list[Any] | dict[str, Any] | None) -> list[MemoryEvent]:
    """The events of one `memory.events` record, raw or JSON-decoded: one `MemoryEvent`
    (`event_value`), or a record written before: a JSON array of them, deflated or not.
    Raises pydantic's `ValidationError` when it is none of them, `DeflatedRecordError` when a
    deflated one does not inflate."""
    if isinstance(value, list):
        return _EVENT_LIST.validate_python(value)
    if isinstance(value, dict):
        return [MemoryEvent.model_validate(value)]
    raw = inflated(value) if isinstance(value, bytes) else value or b""
    if raw.lstrip()[:1] in (b"[", "["):
        return _EVENT_LIST.validate_json(raw)
    return [MemoryEvent.model_validate_json(raw)]
