"""From `memory.events` to the destinations: which sinks are on, what records an event makes
for each, and acking an event only once every record made from it is safe.

The sink stage (`agents/sinks.py`) reads `memory.events` with `stream.noack()`: Faust tracks
each message but does not ack it when the agent moves on. `route` acks an event only once every
record made from it is written or dead-lettered in every destination. Faust commits, per
partition, only the offset below the first message not yet acked (`Consumer._new_offset`), and
flushes the producer (dead letters included) before it commits. A crash or rebalance therefore
re-delivers exactly the events whose records were not yet safe, and deterministic document ids
make the second write a no-op. (`stream.take()` would not do: it acks a batch as soon as the
agent's loop body returns, while the records can still sit in a sink's buffer.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Sequence

from pydantic import ValidationError

from sinks.base import SinkRecord
from sinks.runner import DeadLetterSender, RunnerConfig, SinkRunner
from streams.settings import Settings, SinksSettings
from topics.deflated import DeflatedRecordError
from topics.events import EVENT_KINDS, MemoryEvent
from topics.events_wire import events_of
from topics.schema_errors import location

Tables = Mapping[str, Any]
RecordsOf = Callable[[MemoryEvent, Tables, Tables], list[SinkRecord]]
Ack = Callable[[], Awaitable[Any]]


@dataclass(frozen=True)
class SinkPlan:
    """One destination's runner and how an event becomes its records."""

    runner: SinkRunner
    records_of: RecordsOf


def memory_records(event: MemoryEvent, audit: Tables, memories: Tables) -> list[SinkRecord]:
    """Vector-store records: the memory's current document, or a delete once it is gone.

    Every state is upserted (the destination marks non-active memories unsearchable); events
    about things that are not memories (blocked-topic markers) give nothing.
    """
    if EVENT_KINDS[event.kind].removes_memory:
        # Gone, or a content-free tombstone left by the lifecycle's purge: delete either way.
        return [SinkRecord(key=event.memory_id, op="delete", user_id=event.user_id,
                           document={"id": event.memory_id, "type": event.meta.get("type")})]
    document = memories.get(event.memory_id)
    if document is not None:
        return [SinkRecord(key=event.memory_id, op="upsert", user_id=event.user_id,
                           document=dict(document))]
    return []


def runner_config(s: Settings) -> RunnerConfig:
    return RunnerConfig(
        batch_size=s.sinks.sink_batch_size, max_age=s.sinks.sink_batch_max_age_ms / 1000,
        buffer_records=max(s.sinks.sink_buffer_records, s.sinks.sink_batch_size),
        retry_attempts=s.sinks.sink_retry_attempts, retry_initial=s.sinks.sink_retry_initial_ms / 1000,
        retry_max=s.sinks.sink_retry_max_ms / 1000,
    )


def opensearch_plan(s: Settings, dead_letter: DeadLetterSender) -> SinkPlan:
    from sinks.opensearch import OpenSearchDestination, records_for_event

    destination = OpenSearchDestination(str(s.sinks.opensearch_url), prefix=s.sinks.opensearch_index_prefix,
                                        timeout=s.sinks.opensearch_timeout_seconds)
    return SinkPlan(SinkRunner(destination, dead_letter, runner_config(s)), records_for_event)


def s3vectors_plan(s: Settings, dead_letter: DeadLetterSender) -> SinkPlan:
    """Factory hook of the S3 Vectors destination (`sinks/s3vectors.py`), imported only when
    configured (it pulls boto3 and the LangGraph layout)."""
    from sinks.s3vectors import S3VectorsDestination

    target = s.with_values(s3v_bucket=s.sinks.s3vectors_bucket or s.sinks.s3v_bucket,
                           s3v_index_memory=s.sinks.s3vectors_index or s.sinks.s3v_index_memory)
    return SinkPlan(SinkRunner(S3VectorsDestination(target), dead_letter, runner_config(s)),
                    memory_records)


def pgvector_plan(s: Settings, dead_letter: DeadLetterSender) -> SinkPlan:
    """Factory hook of the pgvector destination (`sinks/pgvector.py`, psycopg)."""
    from sinks.pgvector import PgVectorDestination

    return SinkPlan(SinkRunner(PgVectorDestination.from_settings(s), dead_letter, runner_config(s)),
                    memory_records)


def chroma_plan(s: Settings, dead_letter: DeadLetterSender) -> SinkPlan:
    """Factory hook of the Chroma destination (`sinks/chroma.py`, chromadb)."""
    from sinks.chroma import ChromaDestination

    return SinkPlan(SinkRunner(ChromaDestination.from_settings(s), dead_letter, runner_config(s)),
                    memory_records)


@dataclass(frozen=True)
class Destination:
    """A kind of destination: when the settings turn it on, and how its plan is made (its
    module is imported only then, so an unused SDK is never loaded).

    `MEMORY_STORE` names the destinations that are on; `unnamed` is the rule when it is unset
    (OpenSearch and S3 Vectors ran on their own settings before MEMORY_STORE existed)."""

    name: str
    unnamed: Callable[[SinksSettings], bool]
    plan: Callable[[Settings, DeadLetterSender], SinkPlan]

    def enabled(self, sinks: SinksSettings) -> bool:
        if sinks.memory_stores:
            return self.name in sinks.memory_stores
        return self.unnamed(sinks)


def _never(sinks: SinksSettings) -> bool:
    return False


DESTINATIONS = (
    Destination("opensearch", lambda sinks: bool(sinks.opensearch_url), opensearch_plan),
    Destination("s3vectors", lambda sinks: bool(sinks.s3vectors_bucket and sinks.s3vectors_index),
                s3vectors_plan),
    Destination("pgvector", _never, pgvector_plan),
    Destination("chroma", _never, chroma_plan),
)
"""Every destination memstream can copy `memory.events` to (`MEMORY_STORES` of the settings
names the same); a new one is a row here."""


def configured(s: Settings) -> list[str]:
    """The destinations the settings turn on."""
    return [destination.name for destination in DESTINATIONS if destination.enabled(s.sinks)]


def make_plans(s: Settings, dead_letter: DeadLetterSender) -> list[SinkPlan]:
    """A plan per configured destination; none when nothing is configured."""
    return [d.plan(s, dead_letter) for d in DESTINATIONS if d.enabled(s.sinks)]


class _Countdown:
    """Acks a record once each record made from its events has finished in its destination."""

    def __init__(self, count: int, ack: Ack) -> None:
        self.left = count
        self._ack = ack

    async def done(self) -> None:
        self.left -= 1
        if self.left == 0:
            await self._ack()


async def route(events: Sequence[MemoryEvent], plans: list[SinkPlan], ack: Ack, audit: Tables,
                memories: Tables) -> int:
    """Submit the records of a `memory.events` record's events to every destination, in
    order; `ack` runs once all are safe.

    Waits while a destination's buffer is full (backpressure). Returns the records submitted.
    """
    work = [(plan, record) for event in events for plan in plans
            for record in plan.records_of(event, audit, memories)]
    if not work:
        await ack()
        return 0
    countdown = _Countdown(len(work), ack)
    for plan, record in work:
        await plan.runner.submit(record, countdown.done)
    return len(work)


def parse_events(raw: bytes | None) -> list[MemoryEvent]:
    """A `memory.events` record's events (`topics.events_wire.events_of`); raises ValueError with a
    content-free reason."""
    try:
        return events_of(raw)
    except DeflatedRecordError:
        raise ValueError("invalid_event: does not inflate") from None
    except ValidationError as exc:
        fields = ",".join(location(e) for e in exc.errors()[:5])
        raise ValueError(f"invalid_event: {fields}") from None
