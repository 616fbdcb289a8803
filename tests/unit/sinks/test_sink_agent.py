"""The sink agent's routing: an event is acked only once its records are safe in every sink."""
from __future__ import annotations

import zlib
from datetime import datetime, timezone

import pytest

import agents
import agents.sinks as sink_stage
import sinks.routing as routing
from sinks.base import SinkRecord
from streams.app.factory import create_app
from streams.settings import Settings
from tests.legacy_events import batched_record
from tests.unit.sinks.fakes import FakeDestination, Recorder, runner
from topics.deflated import DEFLATED
from topics.events import MemoryEvent
from topics.events_wire import event_value

TS = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


def event(kind: str = "created", memory_id: str = "m1") -> MemoryEvent:
    return MemoryEvent(event_id=f"e-{kind}", kind=kind, user_id="ana", thread_id="t1",  # type: ignore[arg-type]
                       memory_id=memory_id, rev=1, ts=TS, summary="s", category="Personal",
                       meta={"type": "semantic"})


def two_records(ev: MemoryEvent, audit, memories) -> list[SinkRecord]:
    return [SinkRecord(key=f"{ev.event_id}:{i}", op="upsert", user_id=ev.user_id) for i in (1, 2)]


class Acks:
    def __init__(self) -> None:
        self.count = 0

    async def __call__(self) -> None:
        self.count += 1


async def test_the_event_is_acked_only_after_every_destination_wrote_its_records():
    r = Recorder()
    slow, fast = FakeDestination("slow"), FakeDestination("fast")
    slow.gate.clear()
    plans = [routing.SinkPlan(runner(slow, r), two_records),
             routing.SinkPlan(runner(fast, r), routing.memory_records)]
    for plan in plans:
        await plan.runner.start()
    ack = Acks()
    submitted = await routing.route([event()], plans, ack, {}, {"m1": {"id": "m1", "user_id": "ana"}})
    assert submitted == 3
    await plans[1].runner.flush()
    assert fast.stored and ack.count == 0, "one sink is done, the other is not: no ack yet"
    slow.gate.set()
    for plan in plans:
        await plan.runner.stop()
    assert ack.count == 1 and len(slow.stored) == 2


async def test_a_record_of_several_events_is_acked_once_after_the_records_of_all():
    r = Recorder()
    destination = FakeDestination("many")
    destination.gate.clear()
    plan = routing.SinkPlan(runner(destination, r), routing.memory_records)
    await plan.runner.start()
    ack = Acks()
    memories = {m: {"id": m, "user_id": "ana"} for m in ("m1", "m2")}
    events = [event(memory_id="m1"), event(memory_id="m2"), event(memory_id="topic:ana:diet")]
    assert await routing.route(events, [plan], ack, {}, memories) == 2
    assert ack.count == 0, "nothing is written yet"
    destination.gate.set()
    await plan.runner.stop()
    assert ack.count == 1 and list(destination.stored) == ["m1", "m2"]


async def test_events_of_a_user_purged_since_are_skipped_and_the_purge_still_deletes(tmp_path):
    """A chat "forget everything" after a fact of the same batch: the fact's event, sealed with
    the key the purge shredded, then the purge's own events, in clear. The sinks skip the first
    and route the others: the purged memory leaves the vector store. So in one record each, and
    in one record of both, as a batch's events were written before (`tests.legacy_events`)."""
    from streams.app.inprocess import InProcessPipeline
    from streams.pipeline.sse import SseStage
    from streams.privacy.payloads import seal_event

    class NoEmbedder:  # nothing here embeds
        dim = 384

    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), NoEmbedder())  # type: ignore[arg-type]
    sealer = pipeline.sealed.sealer
    created = event(memory_id="m2")
    sealed_before = event_value(seal_event(sealer, created))
    pipeline.sealed.keys.shred("ana", TS)
    purged = event("purged", memory_id="m1").model_copy(update={"summary": "", "meta": {}})
    purge = event_value(seal_event(sealer, purged))

    for records in ([sealed_before, purge], [batched_record([sealed_before, purge])]):
        destination = FakeDestination("purge")
        plan = routing.SinkPlan(runner(destination, Recorder()), routing.memory_records)
        await plan.runner.start()
        ack = Acks()
        routed = [await sink_stage.handle(_Event(r), [plan], ack, {}, {}, _no_letter, sealer)
                  for r in records]
        await plan.runner.stop()
        assert sum(routed) == 1 and ack.count == len(records), "every record acked"
        assert list(destination.stored) == ["m1"]
        opened = [e.kind for r in records for e in SseStage(None, sealer).opened(r)]  # type: ignore[arg-type]
        assert opened == ["purged"]


async def _no_letter(letter) -> None:
    raise AssertionError(f"dead-lettered: {letter.reason}")


async def test_an_event_that_gives_no_records_is_acked_at_once():
    plan = routing.SinkPlan(runner(FakeDestination("none"), Recorder()), routing.memory_records)
    ack = Acks()
    assert await routing.route([event(memory_id="topic:ana:diet")], [plan], ack, {}, {}) == 0
    assert ack.count == 1


def test_vector_records_upsert_the_current_memory_and_delete_a_purged_one():
    doc = {"id": "m1", "user_id": "ana", "state": "superseded"}
    [upsert] = routing.memory_records(event("superseded"), {}, {"m1": doc})
    assert (upsert.op, upsert.key, upsert.document) == ("upsert", "m1", doc)
    [delete] = routing.memory_records(event("purged"), {}, {})
    assert (delete.op, delete.key, delete.document) == ("delete", "m1", {"id": "m1", "type": "semantic"})


def test_garbage_on_memory_events_gets_a_named_error():
    with pytest.raises(ValueError, match="^invalid_event"):
        routing.parse_events(b'{"kind": "created"}')
    with pytest.raises(ValueError, match="^invalid_event"):
        routing.parse_events(b'[' + event().model_dump_json().encode() + b', {"kind": "created"}]')


def test_a_record_is_one_event_and_the_batched_records_written_before_still_read():
    events = [event(memory_id=f"m{i}").model_copy(update={"event_id": f"e{i}"}) for i in range(8)]
    values = [event_value(e) for e in events]
    assert [routing.parse_events(v) for v in values] == [[e] for e in events]
    record = batched_record(values)  # a batch's events, as written before
    assert record[:1] == DEFLATED and routing.parse_events(record) == events
    assert routing.parse_events(b"[" + b",".join(values) + b"]") == events, "the array in clear"


def test_a_deflated_record_that_does_not_inflate_gets_a_named_error():
    record = batched_record([event_value(event(memory_id=f"m{i}")) for i in range(8)])
    for broken in (record[:-6], record[:1] + b"not zlib at all", DEFLATED + zlib.compress(b"[" * 100)):
        with pytest.raises(ValueError, match="^invalid_event"):
            routing.parse_events(broken)


def test_destinations_come_from_settings_and_none_configured_registers_no_agent():
    assert routing.configured(Settings()) == []
    assert routing.configured(Settings(opensearch_url="http://os:9200", s3vectors_bucket="b",
                                          s3vectors_index="i")) == ["opensearch", "s3vectors"]
    assert routing.configured(Settings(s3vectors_bucket="b")) == [], "bucket alone is not enough"
    # With no sink configured the worker does not consume memory.events for it.
    app = create_app(Settings(table_store="memory://"))
    agents.register_all(app)
    assert "sinks" not in app.faust.agents and "sse" in app.faust.agents


def test_the_s3vectors_hook_builds_the_destination_on_the_configured_bucket_and_index(monkeypatch):
    for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)

    async def dead_letter(letter) -> None:
        raise AssertionError("not used")

    [plan] = routing.make_plans(Settings(s3vectors_bucket="b1", s3vectors_index="i1"), dead_letter)
    assert plan.runner.name == "s3vectors" and plan.records_of is routing.memory_records
    client = plan.runner.destination._client  # type: ignore[attr-defined]
    assert (client.bucket, client.index) == ("b1", "i1")


class _Message:
    topic, partition, offset, key = "memory.events", 0, 7, b"ana"


class _Event:
    def __init__(self, value: bytes) -> None:
        self.value = value
        self.message = _Message()


async def test_a_record_that_cannot_be_routed_is_dead_lettered_and_acked():
    letters = []

    async def capture(letter) -> None:
        letters.append(letter)

    def broken(ev, audit, memories):
        raise KeyError("related_ids")

    plan = routing.SinkPlan(runner(FakeDestination("t-route"), Recorder()), broken)
    garbage, ack = Acks(), Acks()
    assert await sink_stage.handle(_Event(b"not json"), [plan], garbage, {}, {}, capture) == 0
    assert await sink_stage.handle(_Event(event().model_dump_json().encode()), [plan], ack, {}, {},
                                   capture) == 0
    assert [l.reason.split(":")[0] for l in letters] == ["invalid_event", "routing_error"]
    assert letters[1].reason == "routing_error: KeyError" and letters[0].key == "ana"
    assert garbage.count == ack.count == 1, "the offset moves on"
