"""Ingest sends a batch's facts and chat commands in one `memory.candidates` record per user,
in turn order; dedup applies each item of a record in order, and still reads a record of one
item as written before (`topics.candidates`)."""
from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone

import pytest
from aiokafka.errors import RecordTooLargeError

from streams.app.inprocess import InProcessPipeline
from streams.observability.metrics import REGISTRY
from streams.pipeline.records import Record
from streams.pipeline.retries import RetryPolicy
from streams.privacy.payloads import open_record, seal_record
from streams.settings import Settings
from topics import names
from topics.candidates import MAX_ITEMS_PER_RECORD, Candidate, ChatCommand, candidate_items, record_arrays
from tests.unit.pipeline.test_held_records import turn_record
from topics.progress import parse_progress


T0 = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)


@pytest.fixture
def pipeline(tmp_path, minilm_embedder) -> InProcessPipeline:
    return InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)


def items_of(pipeline: InProcessPipeline, record: Record) -> list[Candidate | ChatCommand]:
    return candidate_items(open_record(pipeline.sealed.sealer, record.value or b""))


BATCH = [turn_record(1, "ana", "I adopted a dog named Luna last year."),
         turn_record(2, "bo", "I work as a nurse at the city hospital."),
         turn_record(3, "ana", "Please forget that I adopted a dog named Luna."),
         turn_record(4, "ana", "My sister Maria lives in Porto.")]


async def test_a_batch_sends_one_record_per_user_with_its_items_in_turn_order(pipeline):
    emitted = await pipeline.ingest_stage.handle_batch(BATCH)

    records = pipeline.topics.sent[names.MEMORY_CANDIDATES]
    assert [r.key for r in records] == [b"ana", b"bo"]
    ana = items_of(pipeline, records[0])
    turns = [i.turn.turn_id if isinstance(i, Candidate) else i.command.turn_id for i in ana]
    assert turns == ["1"] * emitted[0] + ["3"] + ["4"] * emitted[3], "facts, the command, facts"
    assert isinstance(ana[emitted[0]], ChatCommand) and ana[emitted[0]].command.kind == "forget"
    assert [i.turn.turn_id for i in items_of(pipeline, records[1])] == ["2"] * emitted[1]


async def test_dedup_applies_each_item_of_a_record_in_order(pipeline):
    await pipeline.ingest_stage.handle_batch(BATCH)
    records = pipeline.topics.sent[names.MEMORY_CANDIDATES]

    outcomes = await pipeline.dedup_stage.handle_batch(records)

    assert [len(o) for o in outcomes] == [len(items_of(pipeline, r)) for r in records]
    summaries = {m.summary: m.state for m in pipeline.store.user_memories("ana")}
    assert any("Luna" in s and state == "soft_deleted" for s, state in summaries.items()), \
        "the forget said at turn 3 applies after turn 1's fact"
    assert any("Maria" in s and state == "active" for s, state in summaries.items()), \
        "and before turn 4's"
    assert not pipeline.topics.sent[names.MEMORY_CANDIDATES_DLQ]


async def test_a_record_of_one_item_written_before_still_applies(pipeline):
    await pipeline.ingest_stage.handle_batch(BATCH[1:2])
    [record] = pipeline.topics.sent[names.MEMORY_CANDIDATES]
    [item] = items_of(pipeline, record)
    before = Record(names.MEMORY_CANDIDATES, 0, 7, b"bo",
                    seal_record(pipeline.sealed.sealer, "bo", item.model_dump(mode="json")), None)

    assert await pipeline.dedup_stage.handle_batch([before]) == [["created"]]


async def test_a_user_with_more_items_than_a_record_holds_gets_several(pipeline, monkeypatch):
    monkeypatch.setattr("topics.candidates.MAX_ITEMS_PER_RECORD", 2)
    ana = [turn_record(i, "ana", text) for i, text in enumerate(
        ["I adopted a dog named Luna.", "I work as a nurse.", "My sister Maria lives in Porto."])]

    emitted = await pipeline.ingest_stage.handle_batch(ana)

    records = pipeline.topics.sent[names.MEMORY_CANDIDATES]
    sizes = [len(items_of(pipeline, r)) for r in records]
    assert sum(sizes) == sum(emitted) >= 3 and max(sizes) == 2


async def test_when_a_users_candidates_are_refused_past_their_retries_their_turns_are_dead_lettered(pipeline):
    """With STAGE_ON_BUG=dead_letter: a passing fault is retried until it clears
    (tests/unit/pipeline/test_retries.py)."""
    real = pipeline.outputs.send
    pipeline.ingest_stage.retries.policy = RetryPolicy(bug_attempts=3, on_bug="dead_letter")
    pipeline.ingest_stage.retries.sleep = no_wait

    async def candidates_refused_for_ana(topic: str, key: bytes | None, value: bytes) -> None:
        if topic == names.MEMORY_CANDIDATES and key == b"ana":
            raise RecordTooLargeError("the broker refuses it")
        await real(topic, key, value)

    pipeline.outputs.send = candidates_refused_for_ana
    turns_before = {outcome: turns_counted(outcome) for outcome in ("dlq", "candidates", "command")}

    await pipeline.ingest_stage.handle_batch(BATCH)

    letters = pipeline.topics.sent[names.CHAT_TURNS_DLQ]
    assert sorted(r.key for r in letters) == [b"ana"] * 3, "each of ana's turns, once"
    assert [r.key for r in pipeline.topics.sent[names.MEMORY_CANDIDATES]] == [b"bo"]
    progress = [p for r in pipeline.topics.sent[names.MEMORY_PROGRESS] for p in parse_progress(r.value)]
    assert {p.turn_id for p in progress if p.outcome == "dlq"} == {"1", "3", "4"}
    assert progress.index(next(p for p in progress if p.outcome == "dlq")) > 0, \
        "after the entries that said the turns were decided"
    counted = {outcome: turns_counted(outcome) - before for outcome, before in turns_before.items()}
    assert counted == {"dlq": 3, "candidates": 1, "command": 0}, "each turn counted once, as it ended"


async def no_wait(seconds: float) -> None:
    """A stage's pause between retries, not waited."""


def turns_counted(outcome: str) -> float:
    return REGISTRY.get_sample_value("memstream_turns_total", {"outcome": outcome}) or 0.0


async def test_a_record_whose_items_fail_is_dead_lettered_once(pipeline, monkeypatch):
    await pipeline.ingest_stage.handle_batch(BATCH[3:4] + BATCH[:1])
    [record] = pipeline.topics.sent[names.MEMORY_CANDIDATES]
    items = items_of(pipeline, record)
    assert len(items) >= 2

    async def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("index gone")

    monkeypatch.setattr(pipeline.dedup_stage, "process_candidate", broken)
    pipeline.dedup_stage.retries.policy = RetryPolicy(bug_attempts=2, on_bug="dead_letter")
    pipeline.dedup_stage.retries.sleep = no_wait
    before = len(pipeline.topics.sent[names.MEMORY_PROGRESS])

    assert await pipeline.dedup_stage.handle_batch([record]) == [["dlq"] * len(items)]

    [letter] = pipeline.topics.sent[names.MEMORY_CANDIDATES_DLQ]
    assert letter.key == b"ana"
    progress = [p for r in pipeline.topics.sent[names.MEMORY_PROGRESS][before:]
                for p in parse_progress(r.value)]
    assert [p.outcome for p in progress] == ["dlq"] * len(items), "each fact says so"


def test_a_record_of_more_items_than_the_cap_is_refused():
    item = {"kind": "command", "command": {"command_id": "c", "kind": "forget", "user_id": "ana",
                                           "ts": "2024-05-01T10:00:00+00:00", "query": "x"}}
    assert len(candidate_items([item] * MAX_ITEMS_PER_RECORD)) == MAX_ITEMS_PER_RECORD
    with pytest.raises(ValueError):
        candidate_items([item] * (MAX_ITEMS_PER_RECORD + 1))


class CountingPass:
    """A lifecycle pass that notes, at each run, how many facts the user had."""

    name = "insights"

    def __init__(self) -> None:
        self.runs: list[tuple[datetime, int]] = []

    async def __call__(self, state, user_id, now):  # type: ignore[no-untyped-def]
        self.runs.append((now, state.current_rev(user_id, "t1")))
        return []


async def test_the_lifecycle_runs_after_each_item_whatever_the_batching(tmp_path, minilm_embedder):
    """The lifecycle sees the same state whether a user's facts come one record a turn (as in
    process) or in one record for the batch (as a busy worker's ingest makes them)."""
    texts = ["I adopted a dog named Luna.", "I work as a nurse.", "My sister Maria lives in Porto.",
             "I play the cello on Sundays.", "I am saving for a house."]
    records = [turn_record(i, "u", text, T0 + timedelta(hours=14 * i))
               for i, text in enumerate(texts)]
    runs = []
    for one_record_per_turn in (True, False):
        counting = CountingPass()
        p = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path / str(one_record_per_turn)),
                              minilm_embedder, [counting])
        for batch in ([[r] for r in records] if one_record_per_turn else [records]):
            await p.ingest_stage.handle_batch(batch)
        sent = p.topics.sent[names.MEMORY_CANDIDATES]
        assert len(sent) == (len(texts) if one_record_per_turn else 1)
        await p.dedup_stage.handle_batch(sent)
        runs.append(counting.runs)
    assert len(runs[0]) >= 2 and runs[0] == runs[1]


async def test_dedup_lets_the_event_loop_run_between_two_items_of_a_record(pipeline):
    """A record holds up to 32 items, each CPU work on the event loop: ingest and the web
    routes run between two items, not after the whole record."""
    await pipeline.ingest_stage.handle_batch(BATCH)
    [ana, _] = pipeline.topics.sent[names.MEMORY_CANDIDATES]
    ticks: list[int] = []
    seen_at_item: list[int] = []
    stage = pipeline.dedup_stage
    real = stage._handle_one

    async def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen_at_item.append(len(ticks))
        return await real(*args, **kwargs)

    async def ticker() -> None:
        while True:
            ticks.append(1)
            await asyncio.sleep(0)

    stage._handle_one = counted  # type: ignore[method-assign]
    running = asyncio.create_task(ticker())
    try:
        await stage.handle_batch([ana])
    finally:
        running.cancel()
    assert len(seen_at_item) >= 3
    assert all(b > a for a, b in zip(seen_at_item, seen_at_item[1:])), \
        "another task ran between each two items"


def test_a_record_of_long_items_is_cut_by_size_and_an_item_longer_than_that_goes_alone(monkeypatch):
    monkeypatch.setattr("topics.candidates.MAX_RECORD_JSON_BYTES", 10)
    items = [b'"aaaa"', b'"bb"', b'"cccccccccccccc"', b'"d"', b'"e"']
    arrays = list(record_arrays(items))
    assert arrays == [b'["aaaa","bb"]', b'["cccccccccccccc"]', b'["d","e"]']
    assert [x for a in arrays for x in json.loads(a)] == [json.loads(i) for i in items]
