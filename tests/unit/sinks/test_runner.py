"""The sink runner with a fake destination: retries, backpressure, dead letters, idempotent keys."""
from __future__ import annotations

import asyncio
import pytest

from sinks import metrics
from sinks.base import PartialSinkError, PermanentSinkError, Rejected, TransientSinkError
from sinks.runner import RunnerConfig, SinkRunner
from tests.unit.sinks.fakes import FakeDestination, Recorder, rec, runner
from topics.sinks_dlq import SinkDeadLetter

HANG_GUARD_S = 120  # fails a test that hangs; never what a test asserts


def value(metric, **labels) -> float:
    return metric.labels(**labels)._value.get()


async def test_transient_errors_are_retried_with_exponential_backoff_and_jitter():
    dest, r = FakeDestination("t-backoff", [TransientSinkError("503")] * 3), Recorder()
    sink = runner(dest, r)
    for i in range(3):
        await sink.submit(rec(f"k{i}"), r.on_done(f"k{i}"))
    await sink.flush()
    assert sorted(dest.stored) == ["k0", "k1", "k2"] and r.done == ["k0", "k1", "k2"]
    assert len(dest.batches) == 4 and not r.letters
    # 0.1, 0.2, 0.4 plus up to 0.05 of jitter each
    for base, slept in zip((0.1, 0.2, 0.4), r.sleeps, strict=True):
        assert base <= slept <= base + 0.05
    assert value(metrics.RETRIES, sink="t-backoff") == 3
    assert value(metrics.ERRORS, sink="t-backoff", kind="transient") == 3
    assert value(metrics.RECORDS, sink="t-backoff", outcome="written") == 3


async def test_by_default_a_destination_that_is_down_is_waited_for_and_nothing_is_dead_lettered():
    dest, r = FakeDestination("t-wait", [TransientSinkError("connection refused")] * 25), Recorder()
    sink = runner(dest, r, retry_attempts=0)
    await sink.submit(rec("a"), r.on_done("a"))
    await sink.flush()
    assert list(dest.stored) == ["a"] and len(dest.batches) == 26
    assert not r.letters and r.done == ["a"], "written once the destination is back"
    assert len(r.sleeps) == 25 and max(r.sleeps) <= 5.0 + 0.05


async def test_after_the_retry_budget_records_go_to_the_dlq_and_are_done():
    dest, r = FakeDestination("t-budget", [TransientSinkError("timeout")] * 9), Recorder()
    sink = runner(dest, r, retry_attempts=3)
    await sink.submit(rec("a"), r.on_done("a"))
    await sink.flush()
    assert len(dest.batches) == 3 and not dest.stored
    [letter] = r.letters
    assert (letter.sink, letter.key, letter.op, letter.user_id) == ("t-budget", "a", "upsert", "u1")
    assert letter.reason.startswith("retries_exhausted") and letter.record["document"] == {"n": 0}
    assert r.done == ["a"], "the partition moves on: the record counts as finished"
    assert value(metrics.RECORDS, sink="t-budget", outcome="dead_lettered") == 1
    assert value(metrics.DEAD_LETTERS, sink="t-budget") == 1


async def test_rejected_records_are_dead_lettered_without_retry_and_the_rest_written():
    dest, r = FakeDestination("t-reject", refuse=frozenset({"bad"})), Recorder()
    sink = runner(dest, r)
    for key in ("a", "bad", "b"):
        await sink.submit(rec(key), r.on_done(key))
    await sink.flush()
    assert sorted(dest.stored) == ["a", "b"] and len(dest.batches) == 1
    assert [(l.key, l.reason) for l in r.letters] == [("bad", "mapper_parsing_exception")]
    assert r.done == ["a", "bad", "b"]
    assert value(metrics.RECORDS, sink="t-reject", outcome="rejected") == 1


async def test_a_partial_failure_retries_only_the_failed_records():
    a, b, c = rec("a"), rec("b"), rec("c")
    partial = PartialSinkError("429 on some items", retry=[b], rejected=[Rejected(c, "strict")])
    dest, r = FakeDestination("t-partial", [partial]), Recorder()
    sink = runner(dest, r)
    for x in (a, b, c):
        await sink.submit(x)
    await sink.flush()
    assert dest.batches == [["a", "b", "c"], ["b"]]
    assert [l.key for l in r.letters] == ["c"]


async def test_a_destination_that_cannot_take_writes_dead_letters_instead_of_blocking():
    dest, r = FakeDestination("t-perm", [PermanentSinkError("index missing")]), Recorder()
    sink = runner(dest, r)
    await sink.submit(rec("a"), r.on_done("a"))
    await sink.flush()
    assert len(dest.batches) == 1 and r.letters[0].reason.startswith("permanent")
    assert r.done == ["a"]


async def test_a_destination_bug_is_contained():
    dest, r = FakeDestination("t-bug", [KeyError("oops")]), Recorder()
    sink = runner(dest, r)
    await sink.submit(rec("a"), r.on_done("a"))
    await sink.flush()
    assert r.letters[0].reason == "unexpected: KeyError" and r.done == ["a"]


async def test_a_record_whose_dead_letter_cannot_be_sent_is_never_reported_done():
    dest, r = FakeDestination("t-nodlq", refuse=frozenset({"bad"})), Recorder()

    async def broken(letter: SinkDeadLetter) -> None:
        raise ConnectionError("broker down")

    sink = SinkRunner(dest, broken, RunnerConfig(retry_attempts=2), sleep=r.sleep)
    await sink.submit(rec("bad"), r.on_done("bad"))
    await sink.submit(rec("ok"), r.on_done("ok"))
    await sink.flush()
    assert r.done == ["ok"], "no ack for 'bad': its event is read again after a restart"
    assert value(metrics.ERRORS, sink="t-nodlq", kind="dead_letter") == 1


async def test_same_key_twice_in_a_batch_is_written_once_last_value_wins():
    dest, r = FakeDestination("t-idem"), Recorder()
    sink = runner(dest, r)
    await sink.submit(rec("k", 1), r.on_done("first"))
    await sink.submit(rec("other"))
    await sink.submit(rec("k", 2), r.on_done("second"))
    await sink.flush()
    assert dest.batches == [["k", "other"]]
    assert dest.stored["k"].document == {"n": 2}
    assert r.done == ["first", "second"], "both submissions are finished"
    # A replay of the same records leaves the destination as it was.
    before = dict(dest.stored)
    await sink.submit(rec("k", 2))
    await sink.submit(rec("other"))
    await sink.flush()
    assert dest.stored == before


async def test_submit_waits_when_the_buffer_is_full_and_resumes_after_a_flush():
    dest, r = FakeDestination("t-bp"), Recorder()
    sink = runner(dest, r, batch_size=2, buffer_records=2, max_age=0.0)
    dest.gate.clear()  # the destination is stalled
    await sink.start()
    await sink.submit(rec("a"))
    await sink.submit(rec("b"))
    third = asyncio.create_task(sink.submit(rec("c")))
    await dest.entered.wait()  # the writer holds [a, b] in a stalled write; `third` has run
    assert not third.done(), "a full buffer makes submit wait"
    assert sink.buffered == 2 and value(metrics.BUFFERED, sink="t-bp") == 2
    dest.gate.set()
    await asyncio.wait_for(third, timeout=HANG_GUARD_S)
    await sink.stop()
    assert sorted(dest.stored) == ["a", "b", "c"], "nothing was dropped"
    assert value(metrics.BUFFERED, sink="t-bp") == 0
    assert dest.started and dest.closed


async def test_the_background_writer_flushes_a_full_batch():
    dest, r = FakeDestination("t-bg"), Recorder()
    sink = runner(dest, r, batch_size=2, buffer_records=4, max_age=3600.0)
    await sink.start()
    written = asyncio.Event()

    async def done() -> None:
        written.set()

    await sink.submit(rec("a"))
    await sink.submit(rec("b"), done)
    await asyncio.wait_for(written.wait(), timeout=HANG_GUARD_S)  # not its age (3600 s)
    assert dest.batches == [["a", "b"]]
    await sink.stop()


def test_config_is_validated():
    with pytest.raises(ValueError):
        RunnerConfig(batch_size=10, buffer_records=5)


async def test_a_destination_down_at_start_is_prepared_with_the_write_retries():
    dest = FakeDestination("t-start", start_failures=[TransientSinkError("connection refused")] * 2)
    r = Recorder()
    sink = runner(dest, r)
    await sink.start()  # does not touch the destination
    await sink.submit(rec("a"), r.on_done("a"))
    await sink.stop()
    assert dest.started and sorted(dest.stored) == ["a"] and r.done == ["a"]
    assert len(r.sleeps) == 2 and not r.letters
