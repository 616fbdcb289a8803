"""Stage 1 — ingest: `chat.turns` → `memory.candidates` (and hot-path commands).

The work is `streams.pipeline.ingest.IngestStage`: validate, trigger, extract, policy filter.
"""
from __future__ import annotations

from faust.types import AgentT

from streams.app.factory import MemstreamApp
from streams.app.faust_compat import record_of
from streams.pipeline.ingest import IngestStage


def register(app: MemstreamApp) -> AgentT:
    stage = IngestStage(app.settings, app.ingest_tables, app.services.llm, app.outputs,
                        embed=app.services.embed)

    async def ingest(stream):  # type: ignore[no-untyped-def]
        """Consume `chat.turns`; yields the facts emitted per record (so `test_context().put`
        can await its processing)."""
        async for event in stream.events():
            yield await stage.handle(record_of(event))

    return app.faust.agent(app.topics.turns, name="ingest")(ingest)
