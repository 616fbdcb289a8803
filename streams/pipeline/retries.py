"""Only what is wrong with a record is dead-lettered: a failure of anything else is retried.

A stage's work on one record can fail for two kinds of reasons. What is wrong with the record
itself (its schema, size, placement, the policy) raises `InvalidRecord` and goes to the DLQ at
once: no retry can mend it. Anything else is not the record's fault, and dead-lettering it
would lose a valid turn for good:

- **passing faults** (`is_transient`): an `OSError` (too many open files, a full disk, a refused
  connection), a timeout, a Kafka error the client calls retriable (a broker away, a leader
  moving). The stage retries the record with exponential backoff and jitter, for as long as it
  takes: the partition waits, as Kafka Streams pauses a task, and goes on where it was once the
  fault clears, in order, with nothing skipped or duplicated (the stages are idempotent per
  record: deterministic ids, the turn log, the applied outbox).
- **anything else** is taken for a bug. It is retried `STAGE_BUG_ATTEMPTS` times (a fault
  that only looks like a bug gets its chance); then, with `STAGE_ON_BUG=stall` (the default),
  the stage *stalls*: it keeps retrying at the longest backoff, `/health` answers not ready,
  `memstream_stage_stalled{stage}` is 1 and the alert `MemstreamStageStalled` fires, so the
  stream is stopped loudly rather than eaten. `STAGE_ON_BUG=dead_letter` dead-letters the record
  instead (reason `internal_error`), to be re-driven with `memstream dlq replay` once fixed.

A stage is stalled while any of its records is; the mark clears when that record goes through.
"""
from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from aiokafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

from streams.errors import InvalidRecord
from streams.settings import InputSettings
from streams.observability import metrics
from streams.observability.logs import describe_failure

log = logging.getLogger(__name__)
T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

_stalled: dict[str, str] = {}
"""Stage → the failure it is stalled on (this process's stages)."""


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` is a passing fault (retried for as long as it lasts), not a bug."""
    if isinstance(exc, KafkaError):
        return bool(exc.retriable) or isinstance(exc, (KafkaTimeoutError, KafkaConnectionError))
    return isinstance(exc, (OSError, TimeoutError, asyncio.TimeoutError))


def stalled_stages() -> dict[str, str]:
    """The stages of this process that are stalled, with the failure each is stalled on."""
    return dict(_stalled)


@dataclass(frozen=True)
class RetryPolicy:
    """How a stage retries a record whose work failed (the settings STAGE_RETRY_*)."""

    initial_s: float = 0.1
    max_s: float = 30.0
    bug_attempts: int = 3
    on_bug: Literal["stall", "dead_letter"] = "stall"

    @classmethod
    def of(cls, settings: InputSettings) -> RetryPolicy:
        return cls(settings.stage_retry_initial_seconds, settings.stage_retry_max_seconds,
                   settings.stage_bug_attempts, settings.stage_on_bug)

    def backoff(self, attempt: int) -> float:
        """The pause after failed attempt number `attempt` (1, 2, …): exponential up to
        `max_s`, with full jitter so that stages failing together do not retry together."""
        ceiling = min(self.max_s, self.initial_s * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


class StageRetries:
    """The retries of one stage's records. `sleep` is the pause between attempts (tests pass
    one that records the pauses instead of waiting)."""

    def __init__(self, stage: str, policy: RetryPolicy = RetryPolicy(), sleep: Sleep = asyncio.sleep,
                 record_faults: tuple[type[BaseException], ...] = ()) -> None:
        """`record_faults`: the stage's exceptions that say what is wrong with the record, raised
        at once like `InvalidRecord` (e.g. a command that cannot apply)."""
        self.stage = stage
        self.policy = policy
        self.sleep = sleep
        self.record_faults = (InvalidRecord, *record_faults)

    async def run(self, where: str, work: Callable[[], Awaitable[T]]) -> T:
        """`work()`'s result, called again after each failure but `InvalidRecord` and the
        `record_faults` (raised at once) until it succeeds; or, with `on_bug="dead_letter"`, the bug's exception once
        `bug_attempts` have failed. `where` names the record in logs (no content)."""
        attempt = bugs = 0
        while True:
            try:
                result = await work()
            except self.record_faults:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below; none is swallowed
                attempt += 1
                transient = is_transient(exc)
                bugs += 0 if transient else 1
                kind = "transient" if transient else "bug"
                metrics.STAGE_RETRIES.labels(stage=self.stage, kind=kind).inc()
                if bugs >= self.policy.bug_attempts:
                    if self.policy.on_bug == "dead_letter":
                        self._clear()
                        raise
                    self._stall(where, exc)
                elif attempt == 1 or attempt % 10 == 0:
                    log.warning("%s: %s failed (attempt %d, %s), retrying: %s", self.stage, where,
                                attempt, kind, describe_failure(exc))
                await self.sleep(self.policy.max_s if self.stage in _stalled else self.policy.backoff(attempt))
                continue
            if attempt:
                log.info("%s: %s went through after %d failed attempt(s)", self.stage, where, attempt)
                self._clear()
            return result

    def _stall(self, where: str, exc: BaseException) -> None:
        if self.stage not in _stalled:
            log.error("%s STALLED: %s fails every retry (%s); the stage waits and retries every "
                      "%.0f s (/health not ready). Fix and restart, or set STAGE_ON_BUG=dead_letter "
                      "to dead-letter it and go on", self.stage, where, describe_failure(exc),
                      self.policy.max_s)
        _stalled[self.stage] = type(exc).__name__
        metrics.STAGE_STALLED.labels(stage=self.stage).set(1)

    def _clear(self) -> None:
        if _stalled.pop(self.stage, None) is not None:
            log.warning("%s is no longer stalled", self.stage)
        metrics.STAGE_STALLED.labels(stage=self.stage).set(0)
