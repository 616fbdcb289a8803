"""Stage 1 — ingest: `chat.turns` → `memory.candidates` (and hot-path commands).

The work is `streams.pipeline.ingest.IngestStage`: validate, trigger, extract, policy filter.
"""
from __future__ import annotations

from datetime import date

from faust.types import AgentT

from streams.app.factory import MemstreamApp
from streams.app.faust_compat import event_scope_of, record_of
from streams.pipeline.ingest import IngestStage
from streams.language.dates import resolve_dates


def register(app: MemstreamApp) -> AgentT:
    stage = IngestStage(app.settings, app.ingest_tables, app.services.llm, app.outputs,
                        embed=app.services.embed, record_scope=event_scope_of)
    within = app.settings.write.ingest_batch_within_ms / 1000

    async def warm_up_dates() -> None:
        """dateparser builds its tables on first use (~0.2 s): pay it as the worker starts, not
        on the first turn that mentions a relative date."""
        resolve_dates("two days ago", date(2000, 1, 1))

    app.faust.task(warm_up_dates)

    async def ingest(stream):  # type: ignore[no-untyped-def]
        """Consume `chat.turns` in small batches (one embedding call each); yields the facts
        emitted per record (so `test_context().put` can await its processing)."""
        async for events in stream.take_events(app.settings.write.ingest_batch_size, within=within):
            for emitted in await stage.handle_batch([record_of(e) for e in events]):
                yield emitted

    return app.faust.agent(app.topics.turns, name="ingest")(ingest)
