"""Stage — commands: `memory.commands` (chat hot path, registry, admin) → `memory.events`.

The work is `streams.pipeline.commands.CommandsStage`; what it reads and writes is declared in
`streams.app.topology.STAGES`.
"""
from __future__ import annotations

from faust.types import AgentT

from agents.consume import one_by_one
from streams.app.factory import MemstreamApp
from streams.app.stage_kit import StageListeners
from streams.app.topology import Stage


def register(app: MemstreamApp, stage: Stage, listeners: StageListeners) -> AgentT:
    """The commands agent; `listeners.commands` hears each command's outcome."""
    return one_by_one(app, stage, stage.build(app.kit, listeners))
