"""Only bad records are dead-lettered: a passing fault is retried until it clears (the turn is
stored once, nothing duplicated), a bug that fails every retry stalls the stage loudly.

The faults are injected at the boundaries the worker meets them at: the producer's send of the
candidates (a broker timeout three times), the write rules (too many open files), a table write
(a full disk). The pauses between attempts go to a recorder, not the clock.
"""
from __future__ import annotations

import errno
from datetime import datetime, timezone
from typing import Any

import pytest
from aiokafka.errors import KafkaTimeoutError, RecordTooLargeError

from streams.app.inprocess import InProcessPipeline
from streams.errors import InvalidRecord
from streams.observability import metrics
from streams.pipeline import retries
from streams.pipeline.retries import RetryPolicy, StageRetries, is_transient, stalled_stages
from streams.settings import Settings
from topics import names
from topics.dlq import DeadLetter
from topics.turns import Turn

NOW = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


class Pauses:
    """A stage's `sleep`: records each pause; `then` runs at the `at`-th pause (the fault clears)."""

    def __init__(self, at: int = 0, then: Any = None) -> None:
        self.seconds: list[float] = []
        self.at, self.then = at, then

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        if len(self.seconds) == self.at and self.then is not None:
            self.then()


class FailingTimes:
    """Wraps a callable: raises `error` on the first `times` calls, then calls through."""

    def __init__(self, real: Any, error: BaseException, times: int) -> None:
        self.real, self.error, self.left = real, error, times

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.left > 0:
            self.left -= 1
            raise self.error
        return self.real(*args, **kwargs)


@pytest.fixture(autouse=True)
def no_stall_left():
    yield
    retries._stalled.clear()


def gauge(stage: str) -> float:
    return metrics.STAGE_STALLED.labels(stage=stage)._value.get()


def turn(turn_id: str, text: str) -> Turn:
    return Turn(user_id="ana", thread_id="t1", turn_id=turn_id, role="user", speaker="Ana", text=text, ts=NOW)


def dead_letters(pipeline: InProcessPipeline) -> list[DeadLetter]:
    return [DeadLetter.model_validate_json(r.value or b"") for topic in
            (names.CHAT_TURNS_DLQ, names.MEMORY_CANDIDATES_DLQ, names.MEMORY_COMMANDS_DLQ)
            for r in pipeline.topics.sent.get(topic, [])]


def summaries(pipeline: InProcessPipeline) -> list[str]:
    return [m.summary for m in pipeline.store.user_memories("ana")]


def test_passing_faults_and_bugs_are_told_apart():
    assert is_transient(OSError(errno.EMFILE, "Too many open files"))
    assert is_transient(OSError(errno.ENOSPC, "No space left on device"))
    assert is_transient(TimeoutError()) and is_transient(KafkaTimeoutError())
    assert not is_transient(RecordTooLargeError()), "a record too large is not a passing fault"
    assert not is_transient(ValueError("a bug")) and not is_transient(KeyError("x"))


async def test_a_passing_fault_is_retried_with_growing_pauses_for_as_long_as_it_lasts():
    pauses = Pauses()
    retrier = StageRetries("t", RetryPolicy(initial_s=0.1, max_s=2.0, bug_attempts=3), pauses)
    work = FailingTimes(lambda: _value("done"), OSError(errno.EMFILE, "Too many open files"), 12)
    assert await retrier.run("r", work) == "done"
    assert len(pauses.seconds) == 12 and not stalled_stages(), "a fault that clears never stalls"
    assert pauses.seconds[0] <= 0.1 and max(pauses.seconds) <= 2.0 and pauses.seconds[-1] >= 1.0


async def test_what_is_wrong_with_the_record_is_raised_at_once():
    pauses = Pauses()
    retrier = StageRetries("t", RetryPolicy(), pauses, record_faults=(LookupError,))
    for fault in (InvalidRecord("invalid_schema", "x"), LookupError("not applicable")):
        with pytest.raises(type(fault)):
            await retrier.run("r", FailingTimes(lambda: _value(1), fault, 1))
    assert pauses.seconds == []


async def test_a_bug_that_fails_every_retry_stalls_the_stage_until_the_record_goes_through():
    fixed: list[bool] = []
    pauses = Pauses(at=7, then=lambda: fixed.append(True))
    retrier = StageRetries("t-stall", RetryPolicy(initial_s=0.1, max_s=30.0, bug_attempts=3), pauses)
    states: list[dict[str, str]] = []

    async def work() -> str:
        states.append(stalled_stages())
        if not fixed:
            raise ValueError("a bug")
        return "through"

    assert await retrier.run("r", work) == "through"
    assert states[3] == {"t-stall": "ValueError"} and pauses.seconds[3:] == [30.0] * 4, \
        "stalled after three attempts, then retried at the longest pause"
    assert stalled_stages() == {} and gauge("t-stall") == 0


async def test_with_on_bug_dead_letter_the_bug_is_raised_after_its_attempts():
    retrier = StageRetries("t", RetryPolicy(bug_attempts=3, on_bug="dead_letter"), Pauses())
    work = FailingTimes(lambda: _value(1), ValueError("a bug"), 100)
    with pytest.raises(ValueError):
        await retrier.run("r", work)
    assert work.left == 97 and stalled_stages() == {}


async def _value(value: Any) -> Any:
    return value


async def test_a_produce_that_fails_three_times_stores_the_turn_once(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    pipeline.ingest_stage.retries.sleep = pauses = Pauses()
    outputs = pipeline.ingest_stage.outputs
    outputs.candidates = FailingTimes(outputs.candidates, KafkaTimeoutError(), 3)  # type: ignore[method-assign]
    await pipeline.ingest([turn("1", "I adopted a dog named Luna.")])
    assert summaries(pipeline) == ["Ana adopted a dog named Luna."]
    assert len(pauses.seconds) == 3 and dead_letters(pipeline) == []
    assert pipeline.outcomes() == {"created": 1}


async def test_too_many_open_files_while_extracting_delays_the_turn_and_loses_nothing(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    pipeline.ingest_stage.retries.sleep = pauses = Pauses()
    facts = pipeline.ingest_stage.facts
    facts.facts = FailingTimes(facts.facts, OSError(errno.EMFILE, "Too many open files"), 5)  # type: ignore[method-assign]
    await pipeline.ingest([turn("1", "I work as a nurse in Lisbon."), turn("2", "My sister Marta lives in Porto.")])
    assert sorted(summaries(pipeline)) == ["Ana works as a nurse in Lisbon.", "Ana's sister Marta lives in Porto."]
    assert len(pauses.seconds) == 5 and dead_letters(pipeline) == []


async def test_a_full_disk_under_a_table_write_is_retried_until_there_is_room(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    pipeline.dedup_stage.retries.sleep = pauses = Pauses()
    store = pipeline.dedup_stage
    store.process_candidate = FailingTimes(  # type: ignore[method-assign]
        store.process_candidate, OSError(errno.ENOSPC, "No space left on device"), 4)
    await pipeline.ingest([turn("1", "I adopted a dog named Luna.")])
    assert summaries(pipeline) == ["Ana adopted a dog named Luna."]
    assert len(pauses.seconds) == 4 and dead_letters(pipeline) == []
    assert pipeline.outcomes() == {"created": 1}


async def test_a_bug_in_dedup_stalls_it_and_dead_letters_nothing(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    seen: list[dict[str, str]] = []
    stage = pipeline.dedup_stage
    buggy = FailingTimes(stage.process_candidate, KeyError("a bug"), 6)
    stage.process_candidate = buggy  # type: ignore[method-assign]
    stage.retries.sleep = Pauses(at=6, then=lambda: seen.append(stalled_stages()))
    await pipeline.ingest([turn("1", "I adopted a dog named Luna.")])
    assert seen == [{"dedup": "KeyError"}] and gauge("dedup") == 0
    assert summaries(pipeline) == ["Ana adopted a dog named Luna."], "stored once the bug is gone"
    assert dead_letters(pipeline) == []


async def test_with_on_bug_dead_letter_a_bug_dead_letters_the_turn_for_a_replay(tmp_path, minilm_embedder):
    settings = Settings(table_store="memory://", data_dir=tmp_path, stage_on_bug="dead_letter")
    pipeline = InProcessPipeline(settings, minilm_embedder)
    pipeline.ingest_stage.retries.sleep = Pauses()
    facts = pipeline.ingest_stage.facts
    facts.facts = FailingTimes(facts.facts, ValueError("a bug"), 3)  # type: ignore[method-assign]
    await pipeline.ingest([turn("1", "I adopted a dog named Luna."), turn("2", "I work as a nurse in Lisbon.")])
    assert [(d.stage, d.reason) for d in dead_letters(pipeline)] == [("ingest", "internal_error")]
    assert summaries(pipeline) == ["Ana works as a nurse in Lisbon."]
