"""The worker's stream stages: one module per stage, each a thin Faust agent over `streams/`.

Which stages there are, what each reads, writes and dead-letters, and how its object is built is
declared once in `streams.app.topology.STAGES`; `register_all(app, listeners)` adds the agent
of each stage a worker runs (`streams.worker.build_worker`). A turn's way: `ingest`
(chat.turns; with a deferred LLM, `enrich` too) → `dedup` (memory.candidates) → memory.events, read by `sse` and `sinks`;
`commands` (memory.commands) changes memories on request.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agents import commands, dedup, enrich, ingest, sinks, sse
from streams.app.stage_kit import NO_LISTENERS, StageListeners
from streams.app.topology import STAGES

if TYPE_CHECKING:
    from streams.app.factory import MemstreamApp
    from streams.app.topology import Stage

AGENTS: dict[str, Callable[[MemstreamApp, Stage, StageListeners], Any]] = {
    "ingest": ingest.register, "enrich": enrich.register, "dedup": dedup.register, "commands": commands.register,
    "sse": sse.register, "sinks": sinks.register,
}
"""The agent of each stage of `STAGES`, by stage name."""


def register_all(app: MemstreamApp, listeners: StageListeners = NO_LISTENERS) -> None:
    """Register the agent of every stage `app`'s settings enable (the sinks stage only when a
    sink is configured); `listeners` hear what the stages did (`streams.api.state`)."""
    for stage in STAGES:
        if stage.enabled(app.settings):
            AGENTS[stage.name](app, stage, listeners)
