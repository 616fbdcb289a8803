"""A scripted in-memory destination and a recorder of sleeps, dead letters and done callbacks."""
from __future__ import annotations

import asyncio
from typing import Sequence

from sinks.base import Rejected, SinkRecord
from sinks.runner import RunnerConfig, SinkRunner
from topics.sinks_dlq import SinkDeadLetter


def rec(key: str, n: int = 0, op: str = "upsert") -> SinkRecord:
    return SinkRecord(key=key, op=op, user_id="u1", document={"n": n})  # type: ignore[arg-type]


class FakeDestination:
    """Stores records by key; fails as scripted. `gate` holds writes until it is set."""

    def __init__(self, name: str, failures: Sequence[BaseException] = (),
                 refuse: frozenset[str] = frozenset(),
                 start_failures: Sequence[BaseException] = ()) -> None:
        self.name = name
        self.start_failures = list(start_failures)
        self.failures = list(failures)
        self.refuse = refuse
        self.stored: dict[str, SinkRecord] = {}
        self.batches: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()
        self.started = self.closed = False

    async def start(self) -> None:
        if self.start_failures:
            raise self.start_failures.pop(0)
        self.started = True

    async def write(self, batch: Sequence[SinkRecord]) -> list[Rejected]:
        self.entered.set()
        await self.gate.wait()
        self.batches.append([r.key for r in batch])
        if self.failures:
            raise self.failures.pop(0)
        for r in batch:
            if r.key not in self.refuse:
                self.stored[r.key] = r
        return [Rejected(r, "mapper_parsing_exception") for r in batch if r.key in self.refuse]

    async def close(self) -> None:
        self.closed = True


class Recorder:
    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.letters: list[SinkDeadLetter] = []
        self.done: list[str] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    async def dead_letter(self, letter: SinkDeadLetter) -> None:
        self.letters.append(letter)

    def on_done(self, key: str):
        async def done() -> None:
            self.done.append(key)
        return done


def runner(dest: FakeDestination, rec_: Recorder, **config) -> SinkRunner:
    cfg = RunnerConfig(**{"batch_size": 10, "buffer_records": 10, "max_age": 60.0,
                          "retry_attempts": 4, "retry_initial": 0.1, "retry_max": 5.0,
                          "retry_jitter": 0.05, **config})
    return SinkRunner(dest, rec_.dead_letter, cfg, sleep=rec_.sleep)
