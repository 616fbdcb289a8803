"""Stage enrich — a window of `chat.turns` → the model's further `memory.candidates`.

The work is `streams.pipeline.enrich.EnrichStage`. The agent reads the turns without acking them
(`Stream.noack`), gathers them in a `TurnWindow` (`LLM_WINDOW_SECONDS`, `LLM_WINDOW_TURNS` at
most, at once on a rebalance or a stop), and acks a window's turns only once their candidates
are sent: a crash leaves them to be asked about again. Registered only when the model's
extraction is deferred (`streams.app.topology.STAGES`).
"""
from __future__ import annotations

import asyncio
from typing import Any, cast

from faust import Stream
from faust.types import AgentT, EventT, StreamT

from streams.app.factory import MemstreamApp
from streams.app.faust_compat import record_of
from streams.app.stage_kit import StageListeners
from streams.app.topology import Stage, TopologyError
from streams.observability.stage_cpu import cpu_counted
from streams.pipeline.enrich import TICK_SECONDS, TurnWindow


def register(app: MemstreamApp, stage: Stage, listeners: StageListeners) -> AgentT:
    """The enrich agent."""
    handler = stage.build(app.kit, listeners)
    if stage.batching is None:
        raise TopologyError(f"stage {stage.name} declares no window")
    seconds = stage.batching.within_ms(app.settings) / 1000
    turns = stage.batching.size(app.settings)

    async def enrich(stream: StreamT[Any]) -> None:
        """Gather the turns in windows, ask the model about each, ack its turns."""
        # Faust hands an agent a `Stream`; the agent's type declares only `StreamT`, without `noack`
        events = cast(Stream[Any], stream).noack()

        async def ask(window: list[EventT[Any]]) -> None:
            await cpu_counted(stage.name, handler.handle_batch([record_of(e) for e in window]))
            for event in window:
                await events.ack(event)

        window: TurnWindow[EventT[Any]] = TurnWindow(
            ask, seconds=seconds, turns=turns,
            urgent=lambda: bool(app.faust.rebalancing or app.faust.should_stop))

        async def tick() -> None:
            while True:
                await asyncio.sleep(TICK_SECONDS)
                await window.tick()

        window.start()
        ticker = asyncio.ensure_future(tick())
        try:
            async for event in events.events():
                await window.add(event)
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
            await window.stop()

    enrich.__doc__ = f"Consume `{stage.reads}` in windows of turns (stage {stage.name})."
    return app.faust.agent(app.topics.named(stage.reads), name=stage.name)(enrich)
