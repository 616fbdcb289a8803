"""Stage — sinks: `memory.events` to every configured destination (MEMORY_STORE: OpenSearch,
S3 Vectors, pgvector, Chroma).

Input `memory.events`, keyed by user_id like the tables, so the worker that reads an event's
partition also holds the user's `memories` and `audit` tables: the records are built from local
state (`sinks.routing`). Output: the destinations, and `memory.sinks.dlq` for records a
destination gave up on. Offsets never run ahead of the writes: an event is acked only once its
records are safe (see `sinks/routing.py`).

With no destination configured (MEMORY_STORE unset, and `OPENSEARCH_URL`, `S3VECTORS_BUCKET` +
`S3VECTORS_INDEX` unset)
no agent is registered (the stage's `enabled` in `streams.app.topology.STAGES`): the worker does not even subscribe to `memory.events` for it.
"""
from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from faust import Stream
from faust.types import AgentT, EventT, StreamT

from sinks.routing import Ack, SinkPlan, Tables, make_plans, parse_events, route
from streams.app.factory import MemstreamApp
from streams.app.stage_kit import StageListeners
from streams.app.topology import Stage
from streams.privacy.payloads import open_events
from streams.privacy.sealed import Sealer
from topics import names
from topics.sinks_dlq import SinkDeadLetter

log = logging.getLogger(__name__)


async def handle(event: EventT, plans: list[SinkPlan], ack: Ack, audit: Tables, memories: Tables,
                 dead_letter: Callable[[SinkDeadLetter], Awaitable[None]],
                 sealer: Sealer | None = None) -> int:
    """Route one `memory.events` record's events (opened with `sealer`). A record that cannot
    be routed is dead-lettered and acked: it never crashes the worker nor holds the partition's
    offset back. Events sealed for a user purged since are skipped (`open_events`): the purge's
    own events, in clear, remove the user's documents from the destinations."""
    message = event.message
    try:
        parsed = parse_events(event.value)
        if sealer is not None:
            parsed = open_events(sealer, parsed)
        return await route(parsed, plans, ack, audit, memories)
    except Exception as exc:  # noqa: BLE001 - bad input or a routing bug: one record, not the stream
        reason = str(exc) if isinstance(exc, ValueError) else f"routing_error: {type(exc).__name__}"
        log.warning("memory.events record at %s[%d]@%d not routed to sinks: %s", message.topic,
                    message.partition, message.offset, reason.split(":")[0])
        key = (message.key or b"").decode("utf-8", "replace")
        await dead_letter(SinkDeadLetter(
            sink="*", key=key, reason=reason, op="upsert", user_id=key,
            record={"raw_b64": base64.b64encode(event.value or b"").decode("ascii")}))
        await ack()
        return 0


def register(app: MemstreamApp, stage: Stage, listeners: StageListeners) -> AgentT:
    """The sinks agent (`agents.register_all` registers it when a destination is configured)."""
    sealer = app.sealed.sealer
    dead_letters = app.topics.named(stage.dead_letters or names.MEMORY_SINKS_DLQ)

    async def send_dead_letter(letter: SinkDeadLetter) -> None:
        """To `memory.sinks.dlq`, keyed by user_id, the record sealed for its user; the content
        is never logged."""
        if letter.record:
            letter = letter.model_copy(update={
                "record": {}, "sealed": sealer.seal(letter.user_id, letter.record)})
        await dead_letters.send(key=letter.user_id.encode(),
                                value=letter.model_dump_json().encode())

    async def sinks(stream: StreamT[Any]) -> None:
        """Route each event to the destinations, ack it when its records are safe."""
        plans = make_plans(app.settings, send_dead_letter)
        for plan in plans:
            await plan.runner.start()
        log.info("sinks on: %s", ", ".join(p.runner.name for p in plans))
        # Faust hands an agent a `Stream`; the agent's type declares only `StreamT`, without `noack`
        events = cast(Stream[Any], stream).noack()
        try:
            async for event in events.events():
                await handle(event, plans, _acker(events, event), app.sealed.memory.audit,
                             app.sealed.memory.memories, send_dead_letter, sealer)
        finally:
            for plan in plans:
                await plan.runner.stop()

    return app.faust.agent(app.topics.named(stage.reads), name=stage.name)(sinks)


def _acker(stream: StreamT[Any], event: EventT[Any]) -> Ack:
    async def ack() -> None:
        await stream.ack(event)
    return ack
