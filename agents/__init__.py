"""The worker's stream stages: one module per stage, each a thin Faust agent over `streams/`.

`register_all(app)` adds every stage to a worker's app (`streams.app.worker.build_worker`).
A turn's way: `ingest` (chat.turns) → `dedup` (memory.candidates) → memory.events, read by
`sse` and `sinks`; `commands` (memory.commands) changes memories on request.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from agents import commands, dedup, ingest, sinks, sse

if TYPE_CHECKING:
    from streams.app.factory import MemstreamApp


def register_all(app: MemstreamApp) -> None:
    """Register every stage's agent on `app` (the sinks stage only when a sink is configured)."""
    ingest.register(app)
    dedup.register(app)
    commands.register(app)
    sse.register(app)
    sinks.register(app)
