"""One row per memory event kind (`topics.events.EVENT_KINDS`), and every consumer reads it: the
audit verb, the delta header's sign, the events index's `op` and `node`, the vector stores'
delete. A kind without a row fails here, and a consumer given one fails loudly (no default)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import get_args

import pytest

from sinks.opensearch import event_record
from sinks.routing import memory_records
from streams.memory.audit import verb_of
from streams.read.delta import render_delta
from topics.events import EVENT_KINDS, EventKind, MemoryEvent

KINDS = get_args(EventKind)
TS = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)


def event(kind: str, **meta: object) -> MemoryEvent:
    return MemoryEvent.model_construct(
        event_id=f"e-{kind}", kind=kind, user_id="ana", thread_id="t1", memory_id="m1", rev=3, ts=TS,
        summary="Ana has a dog named Luna.", category="Pets", meta={"type": "semantic", **meta},
        sealed=None)


def change(kind: str) -> dict[str, object]:
    return {"rev": 3, "kind": kind, "memory_id": "m1", "summary": "Ana has a dog named Luna.",
            "category": "Pets", "importance": 3}


def test_every_event_kind_has_its_row():
    assert set(EVENT_KINDS) == set(KINDS)
    assert len(KINDS) == len(set(KINDS))


@pytest.mark.parametrize("kind", KINDS)
def test_each_consumer_answers_each_kind_from_its_row(kind: str):
    spec = EVENT_KINDS[kind]
    assert verb_of(event(kind)) == spec.audit_verb and spec.audit_verb.isupper()
    assert f"- {spec.delta_sign}: " in render_delta(2, [change(kind)])
    doc = event_record(event(kind)).document
    assert doc["op"] == spec.sink_op
    assert doc["node"] == ("hotpath" if spec.write_path else "worker")
    records = memory_records(event(kind), {}, {"m1": {"id": "m1", "summary": "Ana has a dog."}})
    assert [r.op for r in records] == ["delete" if spec.removes_memory else "upsert"]


def test_a_reason_names_its_own_audit_verb():
    assert verb_of(event("updated", reason="check_band_same_fact")) == "MERGE"
    assert verb_of(event("soft_deleted", reason="ttl")) == "TTL"
    assert verb_of(event("soft_deleted", reason="command")) == "SOFT_DELETE"


def test_a_kind_without_a_row_is_refused_not_defaulted():
    unknown = event("frozen")
    with pytest.raises(KeyError):
        verb_of(unknown)
    with pytest.raises(KeyError):
        render_delta(2, [change("frozen")])
    with pytest.raises(KeyError):
        event_record(unknown)
    with pytest.raises(KeyError):
        memory_records(unknown, {}, {})
