"""A consumed record as a stage sees it, and the clock a stage reports its timings with."""
from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from streams.observability import metrics
from topics.progress import TurnProgress


@dataclass(frozen=True)
class Record:
    """One record of an input topic.

    `timestamp` is when it was produced (the record's Kafka timestamp, seconds since the epoch).
    `source` is the transport's own handle of it (the Faust event in the worker), for a stage
    that must process a record inside the transport's scope; stages never look into it.
    """

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: float | None = None
    source: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class StageClock:
    """When a stage took a record: how long it had waited (`queued_ms`, from its timestamp) and,
    at each progress record, how long the stage has worked on it since (`work_ms`)."""

    queued_ms: float | None
    started: float

    @classmethod
    def start(cls, record: Record, stage: str) -> StageClock:
        """The clock of `record`, taken now by `stage` (its wait goes to
        `memstream_stage_queued_seconds`)."""
        queued = None if record.timestamp is None else max(time.time() - record.timestamp, 0.0) * 1000
        if queued is not None:
            metrics.STAGE_QUEUED_SECONDS.labels(stage=stage).observe(queued / 1000)
        return cls(None if queued is None else round(queued, 3), time.perf_counter())

    def stamp(self, progress: TurnProgress) -> TurnProgress:
        """`progress` with this record's queueing and work time so far."""
        work = round((time.perf_counter() - self.started) * 1000, 3)
        return progress.model_copy(update={"queued_ms": self.queued_ms, "work_ms": work})


RecordScope = Callable[[Record], AbstractContextManager[object]]
"""The scope a record is processed in (the worker's: its Faust event is the current one, so
its table writes go to its own partition's changelog)."""


def no_scope(record: Record) -> AbstractContextManager[object]:
    """No scope (in process, without Kafka)."""
    return nullcontext()
