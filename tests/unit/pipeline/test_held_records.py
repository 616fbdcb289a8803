"""A stage holds the memory events and progress of a batch until it ends, then sends each event
as its own `memory.events` record (`topics.events_wire`) and its progress in one
`memory.progress` record per user, after everything else the batch sent; readers take records
of the forms before too (`topics.events_wire`, `topics.progress`)."""
from __future__ import annotations

from datetime import datetime

import orjson
import pytest
from aiokafka.errors import KafkaTimeoutError, RecordTooLargeError

from streams.app.inprocess import InProcessPipeline
from streams.observability.metrics import REGISTRY
from streams.privacy.payloads import open_events, open_record
from streams.pipeline.records import Record
from streams.settings import Settings
from topics import names
from topics.candidates import candidate_items
from topics.commands import Command
from topics.events import MemoryEvent
from topics.events_wire import events_of
from topics.deflated import DEFLATED
from topics.progress import PROGRESS_RECORD, TurnProgress, parse_progress, progress_entries, progress_record
from topics.turns import Turn


def turn_record(offset: int, user: str, text: str,
                ts: str | datetime = "2024-05-01T10:00:00+00:00") -> Record:
    turn = Turn(user_id=user, thread_id="t1", turn_id=str(offset), role="user", speaker="Ana",
                text=text, ts=ts)  # type: ignore[arg-type]
    return Record(names.CHAT_TURNS, 0, offset, user.encode(), turn.model_dump_json().encode(), None)


@pytest.fixture
def pipeline(tmp_path, minilm_embedder) -> InProcessPipeline:
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    pipeline.sent_topics = []  # type: ignore[attr-defined]
    real = pipeline.outputs.send

    async def send(topic: str, key: bytes | None, value: bytes) -> None:
        pipeline.sent_topics.append(topic)  # type: ignore[attr-defined]
        await real(topic, key, value)

    pipeline.outputs.send = send
    return pipeline


BATCH = [turn_record(1, "ana", "I adopted a dog named Luna last year."),
         turn_record(2, "bo", "I work as a nurse at the city hospital."),
         turn_record(3, "ana", "Hi there!"),
         turn_record(4, "ana", "My sister Maria lives in Porto.")]


async def test_an_ingest_batch_sends_one_progress_record_per_user_after_the_rest(pipeline):
    await pipeline.ingest_stage.handle_batch(BATCH)

    records = pipeline.topics.sent[names.MEMORY_PROGRESS]
    assert [r.key for r in records] == [b"ana", b"bo"]
    ana, bo = (parse_progress(r.value) for r in records)
    assert [(p.turn_id, p.outcome) for p in ana] == [("1", "candidates"), ("3", "skipped"),
                                                     ("4", "candidates")]
    assert [p.turn_id for p in bo] == ["2"] and all(p.user_id == "ana" for p in ana)
    assert pipeline.sent_topics[-2:] == [names.MEMORY_PROGRESS] * 2, "after everything else"


async def test_a_dedup_batch_sends_one_progress_record_per_user(pipeline):
    await pipeline.ingest_stage.handle_batch(BATCH)
    candidates = pipeline.topics.sent[names.MEMORY_CANDIDATES]
    ingest = [p for r in pipeline.topics.sent[names.MEMORY_PROGRESS] for p in parse_progress(r.value)]
    before = len(pipeline.topics.sent[names.MEMORY_PROGRESS])

    await pipeline.dedup_stage.handle_batch(candidates)

    records = pipeline.topics.sent[names.MEMORY_PROGRESS][before:]
    assert sorted(r.key for r in records) == [b"ana", b"bo"]
    entries = [p for r in records for p in parse_progress(r.value)]
    assert len(entries) == sum(p.fact_count for p in ingest if p.outcome == "candidates")
    assert {p.stage for p in entries} == {"dedup"}
    assert pipeline.sent_topics[-len(records):] == [names.MEMORY_PROGRESS] * len(records)


def events_by_record(pipeline: InProcessPipeline, start: int = 0) -> list[list[MemoryEvent]]:
    return [open_events(pipeline.sealed.sealer, events_of(r.value))
            for r in pipeline.topics.sent[names.MEMORY_EVENTS][start:]]


async def test_an_ingest_batch_sends_each_event_in_a_record_keyed_by_its_user_before_its_progress(pipeline):
    await pipeline.ingest_stage.handle_batch(BATCH)

    records = pipeline.topics.sent[names.MEMORY_EVENTS]
    events = events_by_record(pipeline)
    assert [len(one) for one in events] == [1] * len(records), "one event a record"
    assert [r.key for r in records] == [e.user_id.encode() for [e] in events]
    ana = [e for [e] in events if e.user_id == "ana"]
    bo = [e for [e] in events if e.user_id == "bo"]
    assert {e.kind for [e] in events} == {"candidate"}
    turns = [e.meta["source_turn_id"] for e in ana]
    assert len(turns) >= 2 and turns == sorted(turns), "a user's in turn order"
    assert "Luna" in " ".join(e.summary for e in ana) and "nurse" in bo[0].summary
    n = len(records)
    assert pipeline.sent_topics[-n - 2:] == [names.MEMORY_EVENTS] * n + [names.MEMORY_PROGRESS] * 2


async def test_a_dedup_batch_sends_one_record_per_event(pipeline):
    await pipeline.ingest_stage.handle_batch(BATCH)
    before = len(pipeline.topics.sent[names.MEMORY_EVENTS])

    await pipeline.dedup_stage.handle_batch(pipeline.topics.sent[names.MEMORY_CANDIDATES])

    records = pipeline.topics.sent[names.MEMORY_EVENTS][before:]
    events = events_by_record(pipeline, before)
    assert [len(one) for one in events] == [1] * len(records)
    assert {e.kind for [e] in events} == {"created"}
    assert len(records) == pipeline.outcomes()["created"] >= 3
    assert sorted({r.key for r in records}) == [b"ana", b"bo"]


async def test_a_command_sends_each_of_its_events_in_a_record(pipeline):
    await pipeline.ingest_stage.handle_batch(BATCH)
    await pipeline.dedup_stage.handle_batch(pipeline.topics.sent[names.MEMORY_CANDIDATES])
    before = len(pipeline.topics.sent[names.MEMORY_EVENTS])
    purge = Command(command_id="p1", kind="purge_user", user_id="ana", ts="2024-05-02T10:00:00+00:00")  # type: ignore[arg-type]
    record = Record(names.MEMORY_COMMANDS, 0, 0, b"ana", purge.model_dump_json().encode(), None)

    assert await pipeline.commands_stage.handle(record) == "applied"

    sent = pipeline.topics.sent[names.MEMORY_EVENTS][before:]
    # not opened: the purge shredded the key they were sealed with
    events = [event for record in sent for event in events_of(record.value)]
    assert len(events) == len(sent) >= 2 and {e.kind for e in events} == {"purged"}


async def test_a_waiting_request_is_told_a_command_applied_only_once_its_events_are_sent(pipeline):
    """`?wait=1` answers when the observer hears; a sink that reads on must find the events."""
    await pipeline.ingest_stage.handle_batch(BATCH)
    await pipeline.dedup_stage.handle_batch(pipeline.topics.sent[names.MEMORY_CANDIDATES])
    sent_when_told: list[int] = []

    class Observer:
        def applied(self, user_id: str, command_id: str, events: list, **_: object) -> None:
            sent_when_told.append(len(pipeline.topics.sent[names.MEMORY_EVENTS]) - before)

        def rejected(self, *_: object, **__: object) -> None:
            raise AssertionError("the purge applies")

    pipeline.commands_stage.observer = Observer()
    before = len(pipeline.topics.sent[names.MEMORY_EVENTS])
    purge = Command(command_id="p1", kind="purge_user", user_id="ana", ts="2024-05-02T10:00:00+00:00")  # type: ignore[arg-type]
    record = Record(names.MEMORY_COMMANDS, 0, 0, b"ana", purge.model_dump_json().encode(), None)

    assert await pipeline.commands_stage.handle(record) == "applied"
    assert sent_when_told == [len(pipeline.topics.sent[names.MEMORY_EVENTS]) - before] and sent_when_told[0] >= 2


def created(n: int) -> list[MemoryEvent]:
    return [MemoryEvent(event_id=f"e{i}", kind="created", user_id="ana", thread_id="t1",
                        memory_id=f"m{i}", rev=i, ts="2024-05-01T10:00:00+00:00",  # type: ignore[arg-type]
                        summary=f"fact {i}", category="Personal")
            for i in range(n)]


async def test_a_users_held_events_go_in_order_one_a_record_when_the_batch_ends(pipeline):
    events = created(70)
    async with pipeline.outputs.held_per_batch("dedup"):
        for event in events:
            await pipeline.outputs.event(event)
        assert not pipeline.topics.sent[names.MEMORY_EVENTS], "held until the batch ends"
    assert events_by_record(pipeline) == [[event] for event in events]


async def test_events_sent_again_after_a_passing_fault_go_on_from_the_first_not_sent(pipeline):
    real, calls = pipeline.outputs.send, []
    pipeline.outputs.retry_sleep = no_wait

    async def send(topic: str, key: bytes | None, value: bytes) -> None:
        calls.append(value)
        if len(calls) == 3:  # the third event's first try
            raise KafkaTimeoutError()
        await real(topic, key, value)

    pipeline.outputs.send = send
    events = created(5)
    async with pipeline.outputs.held_per_batch("dedup"):
        for event in events:
            await pipeline.outputs.event(event)
    assert len(calls) == 6, "the third event tried twice, the others once"
    assert events_by_record(pipeline) == [[event] for event in events], "none sent twice"


async def test_events_of_a_batch_that_raises_are_not_sent(pipeline):
    event = MemoryEvent(event_id="e1", kind="created", user_id="ana", thread_id="t1", memory_id="m1",
                        rev=1, ts="2024-05-01T10:00:00+00:00", summary="s", category="Personal")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        async with pipeline.outputs.held_per_batch("dedup"):
            await pipeline.outputs.event(event)
            raise RuntimeError("the batch failed: its records are redelivered")
    assert not pipeline.topics.sent[names.MEMORY_EVENTS]
    await pipeline.outputs.event(event)
    assert events_by_record(pipeline) == [[event]], "outside a batch: at once"


INGEST_SEND_ERRORS = {"stage": "ingest", "error": "RecordTooLargeError"}


def sends_fail_to(pipeline: InProcessPipeline, failing: str) -> float:
    """Make every send to the topic `failing` raise what no retry mends (a passing fault is
    sent again until it goes: `test_held_events_go_once_a_passing_fault_clears`); the ingest
    send errors counted so far."""
    real = pipeline.outputs.send
    pipeline.outputs.retry_sleep = no_wait

    async def send(topic: str, key: bytes | None, value: bytes) -> None:
        if topic == failing:
            raise RecordTooLargeError("the broker refuses it")
        await real(topic, key, value)

    pipeline.outputs.send = send
    return REGISTRY.get_sample_value("memstream_stage_errors_total", INGEST_SEND_ERRORS) or 0


async def test_events_that_cannot_be_sent_are_counted_and_the_batch_goes_on(pipeline):
    errors = sends_fail_to(pipeline, names.MEMORY_EVENTS)

    await pipeline.ingest_stage.handle_batch(BATCH)

    assert len(pipeline.topics.sent[names.MEMORY_PROGRESS]) == 2, "the progress still goes"
    assert pipeline.topics.sent[names.MEMORY_CANDIDATES]
    assert REGISTRY.get_sample_value("memstream_stage_errors_total", INGEST_SEND_ERRORS) == errors + 2


async def test_progress_that_cannot_be_sent_is_counted_and_the_batch_goes_on(pipeline):
    errors = sends_fail_to(pipeline, names.MEMORY_PROGRESS)

    emitted = await pipeline.ingest_stage.handle_batch(BATCH)

    items = [item for r in pipeline.topics.sent[names.MEMORY_CANDIDATES]
             for item in candidate_items(open_record(pipeline.sealed.sealer, r.value or b""))]
    assert emitted[0] >= 1 and len(items) == sum(emitted)
    assert not pipeline.topics.sent[names.CHAT_TURNS_DLQ], "no turn is dead-lettered for it"
    assert REGISTRY.get_sample_value("memstream_stage_errors_total", INGEST_SEND_ERRORS) == errors + 2


async def no_wait(seconds: float) -> None:
    """The pause between retries, not waited."""


async def test_held_events_go_once_a_passing_fault_clears(pipeline):
    real, failures = pipeline.outputs.send, []
    pipeline.outputs.retry_sleep = no_wait

    async def send(topic: str, key: bytes | None, value: bytes) -> None:
        if topic == names.MEMORY_EVENTS and len(failures) < 4:
            failures.append(topic)
            raise KafkaTimeoutError()
        await real(topic, key, value)

    pipeline.outputs.send = send
    await pipeline.ingest_stage.handle_batch(BATCH)
    assert len(failures) == 4 and pipeline.topics.sent[names.MEMORY_EVENTS], "sent once the fault cleared"


async def test_progress_outside_a_batch_is_sent_at_once(pipeline):
    progress = TurnProgress(user_id="ana", thread_id="t1", turn_id="9", stage="commands",
                            outcome="applied", fact_count=1)
    await pipeline.outputs.progress(progress)
    [record] = pipeline.topics.sent[names.MEMORY_PROGRESS]
    assert parse_progress(record.value) == [progress]


def test_a_record_of_the_form_before_reads_as_one_entry():
    one = TurnProgress(user_id="ana", thread_id="t1", turn_id="1", stage="ingest", outcome="skipped")
    assert parse_progress(one.model_dump_json().encode()) == [one]
    assert progress_entries(orjson.dumps([one.model_dump(), one.model_dump()])) == [one.model_dump()] * 2


@pytest.mark.parametrize("value", [b"", b"{not json", b"[1, 2]", b"42"])
def test_anything_else_is_not_a_progress_record(value):
    with pytest.raises(ValueError):
        progress_entries(value)


def test_a_batchs_progress_record_is_deflated_and_reads_back_as_do_records_written_before():
    entries = [TurnProgress(user_id="ana", thread_id="t", turn_id=str(i), stage="dedup",
                            outcome="created", fact_count=1, memory_id=f"m{i}") for i in range(6)]
    record = progress_record(entries)
    assert record[:1] == DEFLATED and len(record) < len(PROGRESS_RECORD.dump_json(entries)) / 2
    assert parse_progress(record) == entries
    assert parse_progress(PROGRESS_RECORD.dump_json(entries)) == entries, "in clear, as written before"
    with pytest.raises(ValueError):
        parse_progress(record[:-4])
