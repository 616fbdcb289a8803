"""The runner around one destination: batching, retries, backpressure, dead letters, metrics.

Every destination (`sinks/opensearch.py`, `sinks/s3vectors.py`) only writes a batch; this module
gives them all the same delivery behaviour:

- **Bounded buffer, backpressure.** `submit` waits while `buffer_records` records are accepted
  and not yet finished; nothing is ever dropped. The waiting agent stops pulling events, Faust's
  stream buffer fills, and the consumer pauses fetching: the sink's lag shows as consumer lag and
  as `memstream_sink_buffered_records`.
- **Batches by size or age.** A batch is written once `batch_size` records are buffered or the
  oldest has waited `max_age` seconds.
- **Retries with backoff and jitter** (tenacity) of `TransientSinkError`, by default for as long
  as the destination is down (`retry_attempts=0`): a sink that is away is a passing fault, so the
  sink's partitions wait (backpressure) and nothing it should hold is dead-lettered; the stages go
  on. After a `PartialSinkError` only the failed records are retried.
- **Dead letters.** Records the destination refuses (`Rejected`), batches a destination cannot
  take at all, and with a retry budget (`retry_attempts` ≥ 1) records still failing after it, go
  to `memory.sinks.dlq` with the sink, key and reason.
- **Idempotent by key.** Records carry deterministic keys; within a batch the last record of a
  key wins, so a replay (or a retry) leaves the destination as if it were written once.
- **Done callbacks.** `on_done` runs once a record is durably written or dead-lettered; the sink
  agent acks the Kafka event only then (see `sinks/routing.py`), so no offset is committed
  before its records are safe.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import asdict, dataclass
from typing import Awaitable, Callable, Sequence

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    stop_never,
    wait_exponential_jitter,
)

from sinks import metrics
from sinks.base import (
    Destination,
    PartialSinkError,
    PermanentSinkError,
    SinkRecord,
    TransientSinkError,
)
from topics.sinks_dlq import SinkDeadLetter

log = logging.getLogger(__name__)

OnDone = Callable[[], Awaitable[None]]
DeadLetterSender = Callable[[SinkDeadLetter], Awaitable[None]]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RunnerConfig:
    """How a runner batches and retries (settings `SINK_*`)."""

    batch_size: int = 200
    max_age: float = 0.5
    buffer_records: int = 2000
    retry_attempts: int = 0
    """Attempts of a batch on transient errors before its records are dead-lettered; 0: no
    limit (the sink waits while the destination is down)."""
    retry_initial: float = 0.1
    retry_max: float = 5.0
    retry_jitter: float = 0.1

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.buffer_records < self.batch_size:
            raise ValueError("need 1 <= batch_size <= buffer_records")
        if self.retry_attempts < 0:
            raise ValueError("retry_attempts must be 0 (no limit) or more")


@dataclass(frozen=True)
class _Item:
    record: SinkRecord
    on_done: OnDone | None


@dataclass(frozen=True)
class _Dead:
    record: SinkRecord
    reason: str
    outcome: str  # "rejected" (refused by the destination) or "dead_lettered" (gave up)


async def _no_done() -> None:
    return None


class SinkRunner:
    """Delivers records to one destination (see the module docstring for the guarantees)."""

    def __init__(self, destination: Destination, dead_letter: DeadLetterSender,
                 config: RunnerConfig = RunnerConfig(), sleep: Sleep = asyncio.sleep) -> None:
        self.destination = destination
        self.name = destination.name
        self.config = config
        self._dead_letter = dead_letter
        self._sleep = sleep
        self._buffer: list[_Item] = []
        self._space = asyncio.Condition()
        self._filled = asyncio.Event()
        self._flush_lock = asyncio.Lock()
        self._oldest: float | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = False
        metrics.BUFFERED.labels(sink=self.name).set(0)

    @property
    def buffered(self) -> int:
        """Records accepted and not yet finished (written or dead-lettered)."""
        return len(self._buffer)

    async def start(self) -> None:
        """Write batches in the background. The destination is prepared before the first write,
        with the writes' retries, so a destination that is down at start delays, never crashes."""
        self._task = asyncio.create_task(self._run(), name=f"sink-{self.name}")

    async def stop(self) -> None:
        """Write what is buffered, stop the background writer and close the destination."""
        if self._task is not None:
            async with self._flush_lock:  # never cancel a batch half-way through its callbacks
                self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.flush()
        await self.destination.close()
        self._ready = False

    async def submit(self, record: SinkRecord, on_done: OnDone | None = None) -> None:
        """Accept a record; waits while the buffer is full (backpressure, never a drop)."""
        async with self._space:
            await self._space.wait_for(lambda: len(self._buffer) < self.config.buffer_records)
            if not self._buffer:
                self._oldest = time.monotonic()
            self._buffer.append(_Item(record, on_done))
        metrics.BUFFERED.labels(sink=self.name).inc()
        self._filled.set()

    async def flush(self) -> None:
        """Write every record buffered now, batch by batch."""
        while self._buffer:
            await self._flush_batch()

    async def _run(self) -> None:
        while True:
            await self._filled.wait()
            self._filled.clear()
            # Wait for a full batch or for the oldest record's age to run out.
            while self._buffer and len(self._buffer) < self.config.batch_size:
                left = (self._oldest or 0.0) + self.config.max_age - time.monotonic()
                if left <= 0:
                    break
                try:
                    await asyncio.wait_for(self._filled.wait(), left)
                except asyncio.TimeoutError:
                    break
                self._filled.clear()
            if self._buffer:
                await self._flush_batch()
                if self._buffer:
                    self._filled.set()

    async def _flush_batch(self) -> None:
        async with self._flush_lock:
            items = self._buffer[: self.config.batch_size]
            if not items:
                return
            started = time.perf_counter()
            dead = await self._write([item.record for item in items])
            metrics.BATCH_SECONDS.labels(sink=self.name).observe(time.perf_counter() - started)
            undelivered = await self._send_dead_letters(dead)
            for item in items:
                key = item.record.key
                if key not in undelivered:
                    outcome = dead[key].outcome if key in dead else "written"
                    metrics.RECORDS.labels(sink=self.name, outcome=outcome).inc()
                    await self._done(item)
            async with self._space:
                del self._buffer[: len(items)]
                self._oldest = time.monotonic() if self._buffer else None
                self._space.notify_all()
            metrics.BUFFERED.labels(sink=self.name).dec(len(items))

    async def _done(self, item: _Item) -> None:
        try:
            await (item.on_done or _no_done)()
        except Exception:  # noqa: BLE001 - a failing callback must not stop the sink
            log.exception("sink %s: done callback failed", self.name)

    def _retrying(self, retry_on: type[BaseException]) -> AsyncRetrying:
        c = self.config
        return AsyncRetrying(
            stop=stop_after_attempt(c.retry_attempts) if c.retry_attempts else stop_never,
            wait=wait_exponential_jitter(initial=c.retry_initial, max=c.retry_max,
                                         jitter=c.retry_jitter),
            retry=retry_if_exception_type(retry_on), sleep=self._sleep, reraise=True,
            before_sleep=self._on_retry,
        )

    def _on_retry(self, state: RetryCallState) -> None:
        metrics.RETRIES.labels(sink=self.name).inc()

    async def _write(self, records: Sequence[SinkRecord]) -> dict[str, _Dead]:
        """Write a batch with retries; returns the records given up on, by key."""
        pending = list({r.key: r for r in records}.values())  # last record of a key wins
        dead: dict[str, _Dead] = {}
        try:
            async for attempt in self._retrying(TransientSinkError):
                with attempt:
                    try:
                        if not self._ready:
                            await self.destination.start()
                            self._ready = True
                        rejected = await self.destination.write(pending)
                    except PartialSinkError as exc:
                        metrics.ERRORS.labels(sink=self.name, kind="partial").inc()
                        for r in exc.rejected:
                            dead[r.record.key] = _Dead(r.record, r.reason, "rejected")
                        pending = list(exc.retry)
                        raise
                    except TransientSinkError:
                        metrics.ERRORS.labels(sink=self.name, kind="transient").inc()
                        raise
            for r in rejected:
                dead[r.record.key] = _Dead(r.record, r.reason, "rejected")
        except TransientSinkError as exc:
            log.warning("sink %s: %d records still failing after %d attempts (%s)", self.name,
                        len(pending), self.config.retry_attempts, type(exc).__name__)
            dead.update({r.key: _Dead(r, f"retries_exhausted: {exc}", "dead_lettered")
                         for r in pending})
        except PermanentSinkError as exc:
            metrics.ERRORS.labels(sink=self.name, kind="permanent").inc()
            log.error("sink %s cannot take writes (%s); %d records dead-lettered", self.name,
                      type(exc).__name__, len(pending))
            dead.update({r.key: _Dead(r, f"permanent: {exc}", "dead_lettered") for r in pending})
        except Exception as exc:  # noqa: BLE001 - a destination bug must not block the partition
            metrics.ERRORS.labels(sink=self.name, kind="unexpected").inc()
            log.exception("sink %s: unexpected error; %d records dead-lettered", self.name,
                          len(pending))
            dead.update({r.key: _Dead(r, f"unexpected: {type(exc).__name__}", "dead_lettered")
                         for r in pending})
        return dead

    async def _send_dead_letters(self, dead: dict[str, _Dead]) -> set[str]:
        """Send each dead record to the DLQ (with retries); returns the keys that could not be.

        A record whose dead letter could not be sent is not reported done, so its event is
        never acked and is read again after a restart or rebalance: nothing is lost.
        """
        failed: set[str] = set()
        for key, d in dead.items():
            letter = SinkDeadLetter(sink=self.name, key=key, reason=d.reason[:2000], op=d.record.op,
                                    user_id=d.record.user_id, record=asdict(d.record))
            try:
                async for attempt in self._retrying(Exception):
                    with attempt:
                        await self._dead_letter(letter)
            except Exception as exc:  # noqa: BLE001 - an unsent dead letter leaves the record unacked
                metrics.ERRORS.labels(sink=self.name, kind="dead_letter").inc()
                log.error("sink %s: dead letter could not be sent (%s)", self.name,
                          type(exc).__name__)
                failed.add(key)
                continue
            metrics.DEAD_LETTERS.labels(sink=self.name).inc()
        return failed
