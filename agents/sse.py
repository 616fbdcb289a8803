"""Stage — sse: `memory.events` → each user's recent events (`recent_events` table) and the
worker's connected SSE clients (`streams.api.sse`).

The work is `streams.pipeline.sse.SseStage`; what it reads and writes is declared in
`streams.app.topology.STAGES`.
"""
from __future__ import annotations

from faust.types import AgentT

from agents.consume import in_batches
from streams.app.factory import MemstreamApp
from streams.app.stage_kit import StageListeners
from streams.app.topology import Stage


def register(app: MemstreamApp, stage: Stage, listeners: StageListeners) -> AgentT:
    """The sse agent; `listeners.events` hears each new event (the worker's SSE hub)."""
    return in_batches(app, stage, stage.build(app.kit, listeners))
