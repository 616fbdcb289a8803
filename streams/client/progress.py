"""Waiting on `memory.progress` until turns are applied: the client's read-your-writes.

Every stage reports what became of each turn on `memory.progress` (`topics.progress`): the
ingest stage once per turn (`candidates` with how many facts, or `skipped`, `command`, `dlq`,
...), then the dedup stage (or the commands stage, for a command said in chat) once per fact. A
turn is applied when every one of its facts has an outcome (`Completion`).

A client's `ProgressFollower` reads the topic from its end as it was when it started, and a
turn is registered with it before the turn is sent, so no record of the turn can be missed
however fast the worker is. (The LangGraph store, `streams.tools.memstream_store`, waits for a
put's first fact the same way, with a consumer of its own per put.)
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterable
from contextlib import suppress
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from streams.client.errors import ApplyTimeout, ConsumeError
from topics.names import MEMORY_PROGRESS
from topics.candidates import MODEL_FACT_INDEX
from topics.progress import TurnProgress, progress_entries
from topics.turns import Turn

TurnKey = tuple[str, str, str]
"""(user_id, thread_id, turn_id): one turn."""
READ_WAIT_S = 1.0
"""The longest one fetch of progress waits for records (the deadline is checked between)."""


def turn_key(turn: Turn) -> TurnKey:
    return (turn.user_id, turn.thread_id, turn.turn_id)


class Completion:
    """Tracks `memory.progress` until every fact of every turn has an outcome."""

    def __init__(self) -> None:
        self.facts_seen: dict[TurnKey, set[int]] = {}

    def record(self, p: dict[str, Any]) -> bool:
        """Account one progress record; True when it completes its turn."""
        key = (p["user_id"], p["thread_id"], p["turn_id"])
        if p["stage"] == "ingest":
            return p["fact_count"] == 0
        if p["fact_index"] >= MODEL_FACT_INDEX:
            # What a deferred model adds later (`streams.pipeline.enrich`) is not awaited: the
            # turn is done once the rules' facts are applied.
            return False
        seen = self.facts_seen.setdefault(key, set())
        seen.add(p["fact_index"])
        return len(seen) >= p["fact_count"]


class ProgressFollower:
    """Follows `memory.progress` for one client: waiters register the turns they are about to
    send (`expect`), then await them (`applied`).

    It reads every partition of the topic from their end as it was when it started, in one task,
    so a turn registered before it is sent cannot have its records missed, and one consumer
    serves every concurrent wait (20 turns/s waited on cost one fetch loop, not 20 consumers).
    `consumer` is a started consumer with no topic; `close` stops it.
    """

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.consumer = consumer
        self._waiting: dict[TurnKey, _Waiter] = {}
        self._completion = Completion()
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None

    async def start(self) -> "ProgressFollower":
        """Assign every partition of `memory.progress` at its end offset and start reading."""
        consumer = self.consumer
        try:
            partitions = consumer.partitions_for_topic(MEMORY_PROGRESS)
            if not partitions:
                await consumer.topics()  # fetches the cluster's metadata
                partitions = consumer.partitions_for_topic(MEMORY_PROGRESS)
            if not partitions:
                raise ConsumeError(f"topic {MEMORY_PROGRESS} not found on the broker")
            wanted = [TopicPartition(MEMORY_PROGRESS, p) for p in sorted(partitions)]
            consumer.assign(wanted)
            for tp, end in (await consumer.end_offsets(wanted)).items():
                consumer.seek(tp, end)
        except KafkaError as exc:
            raise ConsumeError(f"reading {MEMORY_PROGRESS} failed: {exc!r}") from exc
        self._task = asyncio.create_task(self._follow(), name="memstream-client-progress")
        return self

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
        await self.consumer.stop()
        for waiter in self._waiting.values():
            waiter.fail(ConsumeError("the client was closed while waiting for a turn"))

    def expect(self, turns: Iterable[Turn]) -> list[TurnKey]:
        """Register turns about to be sent (call before sending them)."""
        if self._failure is not None:
            raise ConsumeError(f"reading {MEMORY_PROGRESS} failed: {self._failure!r}")
        keys = [turn_key(t) for t in turns]
        for key in keys:
            self._waiting.setdefault(key, _Waiter())
        return keys

    def forget(self, keys: Iterable[TurnKey]) -> None:
        """Stop expecting turns (their sending failed)."""
        for key in keys:
            self._waiting.pop(key, None)

    async def applied(self, keys: list[TurnKey], timeout: float) -> dict[TurnKey, list[TurnProgress]]:
        """Every progress entry of the turns `keys` names (`expect`ed), by turn, once each is
        applied; `ApplyTimeout` naming the turns still pending after `timeout` seconds."""
        waiters = {key: self._waiting[key] for key in keys}
        try:
            pending = [w.done for w in waiters.values() if not w.done.done()]
            if pending:
                await asyncio.wait(pending, timeout=timeout)
            late = sorted(key for key, w in waiters.items() if not w.done.done())
            if late:
                raise ApplyTimeout(late, timeout)
            for waiter in waiters.values():
                waiter.done.result()  # raises what ended the follower, if anything did
            return {key: list(w.entries) for key, w in waiters.items()}
        finally:
            for key in keys:
                self._waiting.pop(key, None)

    async def _follow(self) -> None:
        try:
            while True:
                batch = await self.consumer.getmany(timeout_ms=int(READ_WAIT_S * 1000))
                for records in batch.values():
                    for record in records:
                        for entry in _entries(record.value):
                            self._account(entry)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broker gone for good: every wait learns it
            self._failure = exc
            for waiter in self._waiting.values():
                waiter.fail(ConsumeError(f"reading {MEMORY_PROGRESS} failed: {exc!r}"))

    def _account(self, entry: dict[str, Any]) -> None:
        key = (entry["user_id"], entry["thread_id"], entry["turn_id"])
        waiter = self._waiting.get(key)
        if waiter is None:
            return
        waiter.entries.append(TurnProgress.model_validate(entry))
        if self._completion.record(entry) and not waiter.done.done():
            waiter.done.set_result(None)
            self._completion.facts_seen.pop(key, None)


class _Waiter:
    """What one expected turn has got so far, and whether it is applied."""

    def __init__(self) -> None:
        self.entries: list[TurnProgress] = []
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def fail(self, error: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(error)


def _entries(value: bytes | None) -> list[dict[str, Any]]:
    """A record's progress entries; none for a record that holds none (not ours to refuse)."""
    try:
        return progress_entries(value)
    except ValueError:
        return []


def memory_ids(progress: Iterable[TurnProgress]) -> list[str]:
    """The memories the entries name (made, changed or merged into), once each, in order."""
    return list(dict.fromkeys(p.memory_id for p in progress if p.memory_id))
