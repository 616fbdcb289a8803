"""Stage 1 — ingest: `chat.turns` → `memory.candidates` (and hot-path commands).

The work is `streams.pipeline.ingest.IngestStage`: validate, trigger, extract, policy filter;
what it reads and writes is declared in `streams.app.topology.STAGES`.
"""
from __future__ import annotations

from faust.types import AgentT

from agents.consume import in_batches
from streams.app.factory import MemstreamApp
from streams.app.stage_kit import StageListeners
from streams.app.topology import Stage


def register(app: MemstreamApp, stage: Stage, listeners: StageListeners) -> AgentT:
    """The ingest agent; the stage's warm-up runs as the worker starts."""
    if stage.warm_up is not None:
        warm_up = stage.warm_up

        async def warm_up_task() -> None:
            warm_up()

        app.faust.task(warm_up_task)
    return in_batches(app, stage, stage.build(app.kit, listeners))
