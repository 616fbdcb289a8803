"""Stage 2 — dedup/merge: `memory.candidates` → `memory.events`.

The work is `streams.pipeline.dedup.DedupStage`: embed a batch, search the user's memories,
create, update or supersede; then the event-time lifecycle (`streams.lifecycle.runner`). What it
reads and writes is declared in `streams.app.topology.STAGES`.
"""
from __future__ import annotations

from faust.types import AgentT

from agents.consume import in_batches
from streams.app.factory import MemstreamApp
from streams.app.stage_kit import StageListeners
from streams.app.topology import Stage


def register(app: MemstreamApp, stage: Stage, listeners: StageListeners) -> AgentT:
    """The dedup agent; after each record it runs the lifecycle (`app.kit.lifecycle`)."""
    return in_batches(app, stage, stage.build(app.kit, listeners))
