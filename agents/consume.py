"""How a stage's agent consumes its topic: in batches, or one record at a time. Each agent
yields once per record (so `test_context().put` can await its processing)."""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

from faust import Stream
from faust.types import AgentT, StreamT

from streams.app.faust_compat import record_of
from streams.app.topology import TopologyError
from streams.observability.stage_cpu import cpu_counted

if TYPE_CHECKING:
    from streams.app.factory import MemstreamApp
    from streams.app.topology import Stage


def in_batches(app: MemstreamApp, stage: Stage, handler: Any) -> AgentT:
    """The agent of `stage` on its input topic, handing `handler.handle_batch` the records of
    each batch (`stage.batching`: the model embeds a batch in one call); yields each result."""
    if stage.batching is None:
        raise TopologyError(f"stage {stage.name} declares no batching")
    size = stage.batching.size(app.settings)
    within = stage.batching.within_ms(app.settings) / 1000

    async def consume(stream: StreamT[Any]) -> AsyncIterator[Any]:
        # Faust hands an agent a `Stream`; the agent's type declares only `StreamT`, without
        # `take_events`
        async for events in cast(Stream[Any], stream).take_events(size, within=within):
            batch = handler.handle_batch([record_of(e) for e in events])
            for result in await cpu_counted(stage.name, batch):
                yield result

    consume.__doc__ = f"Consume `{stage.reads}` in batches (stage {stage.name})."
    return app.faust.agent(app.topics.named(stage.reads), name=stage.name)(consume)


def one_by_one(app: MemstreamApp, stage: Stage, handler: Any) -> AgentT:
    """The agent of `stage` on its input topic, handing `handler.handle` each record; yields
    each result."""

    async def consume(stream: StreamT[Any]) -> AsyncIterator[Any]:
        async for event in stream.events():
            yield await cpu_counted(stage.name, handler.handle(record_of(event)))

    consume.__doc__ = f"Consume `{stage.reads}` one record at a time (stage {stage.name})."
    return app.faust.agent(app.topics.named(stage.reads), name=stage.name)(consume)
