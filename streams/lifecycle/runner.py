"""When the lifecycle passes run, and for whom: in event time, a bounded amount per record.

The dedup stage calls `after_record` for every record it processed, inside that record's scope
(Faust table writes must happen while an event of the partition is being processed; a free
timer could not write tables). The runner then

1. moves the partition's watermark to the record's event time (`watermark.PartitionClock`);
2. runs the passes for the record's own user if their last run is `LIFECYCLE_PERIOD_HOURS` old;
3. runs them for at most `LIFECYCLE_USERS_PER_RECORD` idle users of the partition whose next
   run the watermark has passed (users are co-partitioned by user_id, so writing an idle
   user's tables from another user's record lands on the right partition).

The passes see `now` = the watermark's hour, never the wall clock. Everything depends only on
the records of the partition in offset order, so a replay runs the same passes at the same
event times, whatever the batching.

Exactly once in effect: a record's writes (every user run's and the calendar's) are held while
it runs, kept with its events in the partition's outbox (`watermark.Outbox`), then made. A
record redelivered after a crash does not run again: it makes again whatever of those writes
did not land and re-sends the same events. A failing pass is counted and logged, never
raised: the partition never blocks on the lifecycle.
"""
from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import orjson

from streams.settings import LifecycleSettings
from streams.lifecycle.consent_expiry import ConsentExpiryPass
from streams.lifecycle.forgetting import ForgetConfig, ForgettingPass
from streams.lifecycle.passes import LifecyclePass, ordered
from streams.lifecycle.watermark import Outbox, PartitionClock
from streams.memory.applied import HeldTable, WriteSet, redo, redo_change
from streams.memory.state import MemoryState
from streams.memory.store import MemoryStore
from streams.memory.tables import Table
from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.privacy.crypto import SealError
from streams.privacy import table_values
from streams.privacy.payloads import seal_record
from streams.privacy.sealed import Sealer
from topics.events import MemoryEvent
from topics.sealed import Sealed

log = logging.getLogger(__name__)
STATE_KEY = "lifecycle"
"""Where the runner keeps a user's last run, in the user's `users` record."""


LIFECYCLE_TABLES = ("memories", "users", "thread_revs", "audit", "applied")
"""The memory tables a lifecycle run writes (a purge rewrites `applied` records too)."""


@dataclass
class UserRun:
    """One user's lifecycle run inside a record: the events it made and its held writes."""

    user_id: str
    events: list[MemoryEvent]
    writes: WriteSet

    def sealed(self, sealer: Sealer) -> str:
        """The run as the outbox keeps it: sealed for the user (it holds their content), as a
        sealed table value is (`streams.privacy.table_values`: its memory documents deflate to
        a third), in base64 (the outbox is a JSON table)."""
        content = {"events": [e.model_dump(mode="json") for e in self.events],
                   "writes": self.writes.listed()}
        return base64.b64encode(seal_record(sealer, self.user_id, content)).decode("ascii")


def open_run(sealer: Sealer, kept: str | dict[str, Any]) -> dict[str, Any]:
    """A run the outbox kept (`UserRun.sealed`), or kept before as a JSON `Sealed` envelope;
    raises `SealError` when it does not open (its user was purged since)."""
    if isinstance(kept, dict):
        return sealer.open(Sealed.model_validate(kept))
    try:
        stored = table_values.unpack(base64.b64decode(kept, validate=True))
    except binascii.Error:
        raise SealError("not a kept lifecycle run") from None
    return orjson.loads(sealer.open_stored(stored))


class EventOutlet(Protocol):
    """Where the runner sends the events its passes make, sealed for their user: the stage's
    `streams.pipeline.outputs.Outputs` (the pipeline runs the lifecycle, not the other way)."""

    sealer: Sealer

    async def send(self, topic: str, key: bytes | None, value: bytes, /) -> None: ...


class LifecycleRunner:
    """Runs `passes` per user in event time (module doc)."""

    def __init__(self, store: MemoryStore, schedule: Table, passes: Sequence[LifecyclePass],
                 outputs: EventOutlet, period: timedelta = timedelta(hours=24),
                 idle_users_per_record: int = 2) -> None:
        self.store = store
        self.schedule = schedule
        self.outbox = Outbox(schedule)
        self.passes = ordered(list(passes))
        self.outputs = outputs
        self.period = period
        self.idle_users_per_record = idle_users_per_record

    @classmethod
    def of(cls, lifecycle: LifecycleSettings, store: MemoryStore, schedule: Table,
           passes: Sequence[LifecyclePass], outputs: EventOutlet) -> LifecycleRunner:
        return cls(store, schedule, passes, outputs,
                   period=timedelta(hours=lifecycle.lifecycle_period_hours),
                   idle_users_per_record=lifecycle.lifecycle_users_per_record)

    async def after_record(self, partition: int, user_id: str | None, ts: datetime | None,
                           offset: int) -> list[MemoryEvent]:
        """The lifecycle work the record at `offset` of `partition` brings (module doc); the
        events sent. A redelivered record makes again what it made the first time
        (`watermark.Outbox`). Never raises."""
        try:
            kept = self.outbox.kept(partition, offset)
            if kept is not None:
                await self._redo(kept)
                return []
            return await self._run_due(partition, user_id, ts, offset)
        except Exception as exc:  # noqa: BLE001 - the lifecycle never blocks the partition
            metrics.LIFECYCLE_ERRORS.labels(lifecycle_pass="runner", error=type(exc).__name__).inc()
            log.error("lifecycle run on partition %d failed: %s", partition, describe_failure(exc))
            return []

    async def _run_due(self, partition: int, user_id: str | None, ts: datetime | None,
                       offset: int) -> list[MemoryEvent]:
        """Steps 1-3 of the module doc, every write held until the record's outbox entry is
        kept, then made, then the events sent."""
        calendar = HeldTable(self.schedule, {})
        clock = PartitionClock(calendar)
        now = clock.advance(partition, ts, offset) if ts is not None else clock.watermark(partition, offset)
        if now is None:
            return []
        state = self.store.state()
        runs: list[UserRun] = []
        if user_id is not None and self._due(state, user_id, now):
            metrics.LIFECYCLE_RUNS.labels(trigger="active").inc()
            runs.append(await self._run(state, clock, partition, user_id, now))
        for idle in clock.take_due(partition, now, self.idle_users_per_record):
            if idle != user_id and self._due(state, idle, now):
                metrics.LIFECYCLE_RUNS.labels(trigger="idle").inc()
                runs.append(await self._run(state, clock, partition, idle, now))
        if not runs and not calendar.writes:
            return []
        self.outbox.keep(partition, offset, {
            "now": now.isoformat(), "clock": calendar.listed(),
            "runs": [run.sealed(self.outputs.sealer) for run in runs]})
        calendar.make()
        events: list[MemoryEvent] = []
        for run in runs:
            run.writes.make()
            for event in run.events:
                await self._send(event)
            events += run.events
        return events

    async def _run(self, state: MemoryState, clock: PartitionClock, partition: int,
                   user_id: str, now: datetime) -> UserRun:
        """One user's run with its table writes held (`applied.WriteSet`)."""
        writes = WriteSet(state.tables, LIFECYCLE_TABLES)
        held = state.over(writes.tables)
        events = await self.run_user(held, partition, user_id, now, clock)
        return UserRun(user_id, events, writes)

    async def _redo(self, kept: dict[str, Any]) -> None:
        """Make again the writes of a record's first processing that did not land, and send its
        events again (a run whose user was purged since no longer opens: skipped)."""
        metrics.LIFECYCLE_REDELIVERED.labels(what="records").inc()
        for key, *write in kept.get("clock", []):
            redo_change(self.schedule, key, write)
        state = self.store.state()
        for sealed in kept.get("runs", []):
            try:
                content = open_run(self.outputs.sealer, sealed)
            except SealError:
                continue
            made = redo(state.tables, content["writes"])
            metrics.LIFECYCLE_REDELIVERED.labels(what="writes").inc(len(made))
            state.reindex(made)
            for event in content["events"]:
                await self._send(MemoryEvent.model_validate(event))

    async def _send(self, event: MemoryEvent) -> None:
        """Send `event` (`streams.pipeline.outputs.Outputs.event`: sealed, and held until the
        batch ends when the runner runs inside a stage's batch)."""
        await self.outputs.event(event)

    def _due(self, state: MemoryState, user_id: str, now: datetime) -> bool:
        """A known user (a purged one has no record) whose last run is a period old."""
        info = state.tables.users.get(user_id)
        if info is None:
            return False
        last = (info.get(STATE_KEY) or {}).get("last_run")
        return last is None or now - datetime.fromisoformat(last) >= self.period

    async def run_user(self, state: MemoryState, partition: int, user_id: str, now: datetime,
                       clock: PartitionClock) -> list[MemoryEvent]:
        """Run every pass for one user at `now`, note the run and put the user in `clock`'s
        calendar for the next one; return the events (the caller sends them)."""
        events: list[MemoryEvent] = []
        for lifecycle_pass in self.passes:
            try:
                made = await lifecycle_pass(state, user_id, now)
            except Exception as exc:  # noqa: BLE001 - one pass failing leaves the others
                metrics.LIFECYCLE_ERRORS.labels(lifecycle_pass=lifecycle_pass.name,
                                                error=type(exc).__name__).inc()
                log.error("lifecycle pass %s failed for a user: %s", lifecycle_pass.name,
                          describe_failure(exc))
                continue
            for event in made:
                metrics.LIFECYCLE_TRANSITIONS.labels(lifecycle_pass=lifecycle_pass.name,
                                                     kind=event.kind).inc()
            events += made
        info = state.tables.users.get(user_id)
        if info is not None:  # a pass may not make a user; nor bring back a purged one
            state.tables.users[user_id] = {**info, STATE_KEY: {"last_run": now.isoformat()}}
            clock.schedule(partition, user_id, now + self.period)
        return events


def service_passes(lifecycle: LifecycleSettings, services: Any) -> list[LifecyclePass]:
    """The lifecycle passes the worker and the in-process pipeline run (in `PASS_ORDER` by the
    runner). `services` (`streams.app.services.Services`) gives a pass its embedder or LLM."""
    from streams.lifecycle.consolidation import ConsolidationConfig, ConsolidationPass
    from streams.lifecycle.insights import InsightConfig, InsightPass
    from streams.lifecycle.promotion import PromotionConfig, PromotionPass

    embed, llm = services.embed, services.llm
    return [ForgettingPass(ForgetConfig.of(lifecycle)),
            PromotionPass(PromotionConfig.of(lifecycle), embed=embed),
            ConsolidationPass(ConsolidationConfig.of(lifecycle), llm=llm, embed=embed),
            InsightPass(llm, InsightConfig.of(lifecycle), embed=embed),
            ConsentExpiryPass()]
