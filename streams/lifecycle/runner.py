"""When the lifecycle passes run, and for whom: in event time, a bounded amount per record.

The dedup stage calls `after_record` for every record it processed, inside that record's scope
(Faust table writes must happen while an event of the partition is being processed; a free
timer could not write tables). The runner then

1. moves the partition's watermark to the record's event time (`watermark.PartitionClock`);
2. runs the passes for the record's own user if their last run is `LIFECYCLE_PERIOD_HOURS` old;
3. runs them for at most `LIFECYCLE_USERS_PER_RECORD` idle users of the partition whose next
   run the watermark has passed (users are co-partitioned by user_id, so writing an idle
   user's tables from another user's record lands on the right partition).

A record redelivered after a crash re-sends the events its first processing made
(`watermark.Outbox`): the transitions are in the tables already, their events may not be on
the topic.

The passes see `now` = the watermark, never the wall clock. Everything depends only on the
records of the partition in offset order, so a replay runs the same passes at the same event
times, whatever the batching. A failing pass is counted and logged, never raised: the partition
never blocks on the lifecycle.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from streams.lifecycle.consent_expiry import ConsentExpiryPass
from streams.lifecycle.forgetting import ForgetConfig, ForgettingPass
from streams.lifecycle.passes import LifecyclePass, ordered
from streams.lifecycle.watermark import Outbox, PartitionClock
from streams.memory.state import MemoryState
from streams.memory.store import MemoryStore
from streams.memory.tables import Table
from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.pipeline.outputs import Outputs
from streams.privacy.payloads import seal_event
from topics import names
from topics.events import MemoryEvent

log = logging.getLogger(__name__)
STATE_KEY = "lifecycle"
"""Where the runner keeps a user's last run, in the user's `users` record."""


class LifecycleRunner:
    """Runs `passes` per user in event time (module doc)."""

    def __init__(self, store: MemoryStore, schedule: Table, passes: Sequence[LifecyclePass],
                 outputs: Outputs, period: timedelta = timedelta(hours=24),
                 idle_users_per_record: int = 2) -> None:
        self.store = store
        self.clock = PartitionClock(schedule)
        self.outbox = Outbox(schedule)
        self.passes = ordered(list(passes))
        self.outputs = outputs
        self.period = period
        self.idle_users_per_record = idle_users_per_record

    @classmethod
    def from_settings(cls, settings: Any, store: MemoryStore, schedule: Table,
                      passes: Sequence[LifecyclePass], outputs: Outputs) -> LifecycleRunner:
        return cls(store, schedule, passes, outputs,
                   period=timedelta(hours=settings.lifecycle_period_hours),
                   idle_users_per_record=settings.lifecycle_users_per_record)

    async def after_record(self, partition: int, user_id: str | None, ts: datetime | None,
                           offset: int | None = None) -> list[MemoryEvent]:
        """The lifecycle work one record of `partition` (at `offset`) brings (module doc); the
        events sent. A redelivered record re-sends what it made the first time
        (`watermark.Outbox`). Never raises."""
        try:
            if offset is not None and (kept := self.outbox.sent(partition, offset)) is not None:
                for key, value in kept:
                    await self.outputs.send(names.MEMORY_EVENTS, key.encode(), value.encode())
                return []
            sent: list[list[str]] = []
            events = await self._run_due(partition, user_id, ts, sent)
            if offset is not None and sent:
                self.outbox.keep(partition, offset, sent)
            return events
        except Exception as exc:  # noqa: BLE001 - the lifecycle never blocks the partition
            metrics.LIFECYCLE_ERRORS.labels(lifecycle_pass="runner", error=type(exc).__name__).inc()
            log.error("lifecycle run on partition %d failed: %s", partition, describe_failure(exc))
            return []

    async def _run_due(self, partition: int, user_id: str | None, ts: datetime | None,
                       sent: list[list[str]]) -> list[MemoryEvent]:
        """Steps 1-3 of the module doc; what is sent is noted in `sent`."""
        now = self.clock.advance(partition, ts) if ts is not None else self.clock.watermark(partition)
        if now is None:
            return []
        state = self.store.state()
        events: list[MemoryEvent] = []
        if user_id is not None and self._due(state, user_id, now):
            metrics.LIFECYCLE_RUNS.labels(trigger="active").inc()
            events += await self.run_user(state, partition, user_id, now, sent)
        for idle in self.clock.take_due(partition, now, self.idle_users_per_record):
            if idle != user_id and self._due(state, idle, now):
                metrics.LIFECYCLE_RUNS.labels(trigger="idle").inc()
                events += await self.run_user(state, partition, idle, now, sent)
        return events

    async def _send(self, event: MemoryEvent, sent: list[list[str]]) -> None:
        """Send `event` as `Outputs.event` does (sealed), and note it in `sent`."""
        value = seal_event(self.outputs.sealer, event).model_dump_json()
        await self.outputs.send(names.MEMORY_EVENTS, event.user_id.encode(), value.encode())
        sent.append([event.user_id, value])

    def _due(self, state: MemoryState, user_id: str, now: datetime) -> bool:
        """A known user (a purged one has no record) whose last run is a period old."""
        info = state.tables.users.get(user_id)
        if info is None:
            return False
        last = (info.get(STATE_KEY) or {}).get("last_run")
        return last is None or now - datetime.fromisoformat(last) >= self.period

    async def run_user(self, state: MemoryState, partition: int, user_id: str, now: datetime,
                       sent: list[list[str]] | None = None) -> list[MemoryEvent]:
        """Run every pass for one user at `now`, send their events, note the run and put the
        user in the calendar for the next one."""
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
                await self._send(event, [] if sent is None else sent)
            events += made
        info = state.tables.users.get(user_id)
        if info is not None:  # a pass may not make a user; nor bring back a purged one
            state.tables.users[user_id] = {**info, STATE_KEY: {"last_run": now.isoformat()}}
            self.clock.schedule(partition, user_id, now + self.period)
        return events


def service_passes(settings: Any, services: Any) -> list[LifecyclePass]:
    """The lifecycle passes the worker and the in-process pipeline run (in `PASS_ORDER` by the
    runner). `services` (`streams.app.services.Services`) gives a pass its embedder or LLM."""
    from streams.lifecycle.consolidation import ConsolidationConfig, ConsolidationPass
    from streams.lifecycle.insights import InsightConfig, InsightPass
    from streams.lifecycle.promotion import PromotionConfig, PromotionPass

    embed, llm = services.embed, services.llm
    return [ForgettingPass(ForgetConfig.from_settings(settings)),
            PromotionPass(PromotionConfig.from_settings(settings), embed=embed),
            ConsolidationPass(ConsolidationConfig.from_settings(settings), llm=llm, embed=embed),
            InsightPass(llm, InsightConfig.from_settings(settings), embed=embed),
            ConsentExpiryPass()]
