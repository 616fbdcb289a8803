"""Faults (issue 11 §6): worker SIGKILLs, a broker restart, two workers — each run must end in
the state of the same turns run uninterrupted (`tests/integration/faults.py` explains the
reference), with every turn processed once in effect.

Kill points are progress counts drawn from a seeded RNG, so a failing run can be replayed.
Timings are printed with the figures, never asserted.
"""
from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from streams.app.topic_admin import create_topics
from streams.tools.stack import wait_ready
from streams.tools.broker import EmbeddedBroker
from streams.tools.client import TurnProducer
from tests.fakes.s3_server import LocalS3
from tests.integration.conftest import NO_LIFECYCLE, PARTITIONS, Worker, call, produce
from tests.integration.faults import (
    LOCOMO,
    ProgressLog,
    differences,
    locomo_turns,
    reference_state,
    user_on_partition,
    worker_state,
)
from streams.app.topology import ALL_TOPICS

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not available")]

KILL_SEED = 11
KILLS = 10
STALL_S = 180.0  # hang guard: longest time without a progress record (a restart takes ~15 s)


@dataclass
class Figures:
    """What a fault run measured, printed at its end."""

    name: str
    turns: int
    started: float = field(default_factory=time.monotonic)
    events: list[str] = field(default_factory=list)

    def note(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.started:6.1f}s {what}")

    def report(self, **values: object) -> None:
        print(f"\n[faults] {self.name}: {self.turns} turns, {time.monotonic() - self.started:.1f}s, "
              + ", ".join(f"{k}={v}" for k, v in values.items()))
        for line in self.events:
            print(f"[faults]   {line}")


def alive(*workers: Worker) -> Callable[[], None]:
    """A check that raises, with the end of its log, if one of `workers` has exited."""
    def check() -> None:
        for worker in workers:
            assert worker.proc is not None
            if worker.proc.poll() is not None:
                raise AssertionError(f"worker exited with {worker.proc.returncode}:\n"
                                     + worker.log_path.read_text()[-3000:])
    return check


def test_ten_sigkills_mid_replay_end_in_the_uninterrupted_state(tmp_path):
    """conv-30 whole (369 turns, 19 sessions: the smallest LoCoMo conversation) — all of it, so
    dedup meets the conversation's real repeats and changed facts across sessions, and each of
    the 10 kills falls with tens of turns of work before and after it. The lifecycle is on:
    its six months of event time forget, purge, consolidate and promote across the kills.
    Its processing takes seconds; the 10 restarts (model load, group join) are what the test
    costs."""
    turns = locomo_turns("conv-30")
    kill_at = sorted(random.Random(KILL_SEED).sample(range(1, len(turns)), KILLS))
    figures = Figures("10 SIGKILLs", len(turns))
    reference = reference_state(turns, lifecycle=True)
    figures.note(f"reference run in process: {reference.counts()}")

    async def run(broker: EmbeddedBroker, worker: Worker) -> tuple[list[tuple[int, int]], list[dict]]:
        kills: list[tuple[int, int]] = []
        async with ProgressLog(broker.url, turns) as progress:
            for point in kill_at:
                # At least one more turn complete: when the killed worker's last progress
                # records arrive late and reach it already, this kill falls in the start-up.
                # Once every turn is complete (a restarted worker can catch up past the later
                # kill points), the remaining kills fall on the finished worker.
                trigger = min(max(point, len(progress.done) + 1), len(turns))
                await progress.until(trigger, STALL_S, alive(worker))
                worker.kill()
                kills.append((trigger, len(progress.done)))
                figures.note(f"SIGKILL {len(kills)} at {len(progress.done)} turns complete "
                             f"(trigger {trigger})")
                worker.log_path = tmp_path / f"worker-{len(kills)}.log"
                worker.launch()
            await progress.until(len(turns), STALL_S, alive(worker))
            figures.note("every turn complete")
            # The last kill can fall after the last turn completed (its progress arrived late):
            # the worker launched after it must serve before its state is read.
            await wait_ready(worker.api_url, worker.proc, timeout=STALL_S)
            return kills, progress.records

    with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        worker = Worker(broker.url, tmp_path / "data", "memstream-kills", tmp_path / "worker-0.log").start()
        try:
            asyncio.run(produce(broker.url, turns))
            figures.note("worker ready, turns produced")
            kills, records = asyncio.run(run(broker, worker))
            got = asyncio.run(worker_state(worker.api_url, {t.user_id for t in turns}, records))
        finally:
            worker.stop()

    diffs = differences(got, reference)
    got.dump(tmp_path / "end-state.json")
    reference.dump(tmp_path / "reference.json")
    figures.report(kills=kills, progress_records=len(records), compared=got.counts(),
                   differences=len(diffs))
    assert len(kills) == KILLS
    assert not diffs, "\n".join(diffs)


def test_a_broker_crash_mid_run_loses_and_duplicates_nothing(tmp_path):
    """The broker on durable storage (Tansu's `s3://` engine on moto's S3 server) is killed and
    restarted mid-run; the worker, the producer of the turns and the progress reader ride
    through on their own reconnects. conv-26's first 120 turns (sessions 1-6): Tansu on moto
    runs several times slower than memory storage, and 120 turns still meet repeats across
    sessions and leave most of the run on either side of the restart."""
    turns = locomo_turns("conv-26", limit=120)
    restart_at = random.Random(KILL_SEED).randrange(len(turns) // 8, len(turns) // 2)
    figures = Figures("broker crash", len(turns))
    reference = reference_state(turns, lifecycle=True)
    figures.note(f"reference run in process: {reference.counts()}")

    async def run(broker: EmbeddedBroker, worker: Worker) -> list[dict]:
        async with ProgressLog(broker.url, turns) as progress, TurnProducer(broker.url) as producer:
            half = len(turns) // 2
            for turn in turns[:half]:
                await producer.send_turn(turn)
            await producer.flush()
            await progress.until(restart_at, STALL_S, alive(worker))
            broker.restart(kill=True)
            figures.note(f"broker SIGKILLed and restarted at {len(progress.done)} turns complete")
            for turn in turns[half:]:  # the same producer, reconnecting
                await producer.send_turn(turn)
            await producer.flush()
            figures.note("second half produced after the restart")
            await progress.until(len(turns), STALL_S, alive(worker))
            figures.note("every turn complete")
            return progress.records

    with LocalS3(tmp_path / "s3.log") as storage, \
            EmbeddedBroker(log_path=tmp_path / "broker.log", storage=storage) as broker:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        worker = Worker(broker.url, tmp_path / "data", "memstream-crash", tmp_path / "worker.log").start()
        figures.note("worker ready")
        try:
            records = asyncio.run(run(broker, worker))
            got = asyncio.run(worker_state(worker.api_url, {t.user_id for t in turns}, records))
        finally:
            worker.stop()

    diffs = differences(got, reference)
    figures.report(restart_at=restart_at, progress_records=len(records), compared=got.counts(),
                   differences=len(diffs))
    assert not diffs, "\n".join(diffs)


def test_two_workers_sharing_the_partitions_end_in_the_state_of_one(tmp_path):
    """Four LoCoMo conversations (the first 80 turns of each) as four users, one per partition.
    The first 20 turns of each are produced and processed by one worker; the second worker
    then joins, and once it is ready (its share of the partitions assigned and their tables
    recovered) the other 60 of each are produced, so partitions move to it with their tables
    mid-stream and both take candidates (their metrics say so) whatever the machine's speed.
    Then it stops and its partitions move back to the first worker, which must end in the
    reference's state. (The state is read from one worker: under a heavy load two workers on
    short session timeouts can rebalance for minutes, and the registry answers 503 meanwhile.)"""
    stems = ("conv-41", "conv-42", "conv-43", "conv-44")
    users = [user_on_partition(stem, p, PARTITIONS) for p, stem in enumerate(stems)]
    per_user = [locomo_turns(stem, user, limit=80) for stem, user in zip(stems, users)]
    early = [t for turns_of_user in per_user for t in turns_of_user[:20]]
    late = [t for turns_of_user in per_user for t in turns_of_user[20:]]
    turns = early + late
    figures = Figures("two workers", len(turns))
    reference = reference_state([t for turns_of_user in per_user for t in turns_of_user])
    figures.note(f"reference run in process: {reference.counts()}")

    async def run(broker: EmbeddedBroker, first: Worker, second: Worker) -> list[dict]:
        async with ProgressLog(broker.url, turns) as progress:
            await produce(broker.url, early)
            await progress.until(len(early), STALL_S, alive(first))
            second.launch()
            await wait_ready(second.api_url, second.proc, timeout=STALL_S)
            figures.note(f"second worker ready at {len(progress.done)} turns complete")
            await produce(broker.url, late)
            await progress.until(len(turns), STALL_S, alive(first, second))
            figures.note("every turn complete")
            return progress.records

    with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        first = Worker(broker.url, tmp_path / "d1", "memstream-pair", tmp_path / "w1.log",
                       env=NO_LIFECYCLE).start()
        second = Worker(broker.url, tmp_path / "d2", "memstream-pair", tmp_path / "w2.log",
                        env=NO_LIFECYCLE)
        try:
            records = asyncio.run(run(broker, first, second))
            taken = [asyncio.run(candidates_taken(w)) for w in (first, second)]
            second.stop()
            figures.note("second worker stopped")
            got = asyncio.run(worker_state(first.api_url, users, records, timeout=STALL_S))
        finally:
            second.stop()
            first.stop()

    diffs = differences(got, reference)
    figures.report(candidates_taken=taken, progress_records=len(records), compared=got.counts(),
                   differences=len(diffs))
    assert all(taken), "both workers took candidates: the partitions were shared"
    assert not diffs, "\n".join(diffs)


async def candidates_taken(worker: Worker) -> float:
    """Candidate records the worker's dedup stage took (its /metrics)."""
    _, text = await call(worker.api_url, "GET", "/metrics")
    prefix = 'memstream_stage_records_total{stage="dedup"} '
    return sum(float(line[len(prefix):]) for line in text.splitlines() if line.startswith(prefix))
