"""Stage 2 — dedup/merge: `memory.candidates` → `memory.events`.

The work is `streams.pipeline.dedup.DedupStage`: embed a batch, search the user's memories,
create, update or supersede; then the event-time lifecycle (`streams.lifecycle.runner`).
"""
from __future__ import annotations

from collections.abc import Sequence

from faust.types import AgentT

from streams.app.factory import MemstreamApp
from streams.app.faust_compat import event_scope_of, record_of
from streams.lifecycle.passes import LifecyclePass
from streams.lifecycle.runner import LifecycleRunner, service_passes
from streams.pipeline.dedup import DedupStage
from streams.proactivity import ProactivityPolicy


def register(app: MemstreamApp, passes: Sequence[LifecyclePass] = ()) -> AgentT:
    """The dedup agent; after each record it runs the lifecycle (`service_passes`, and `passes`)."""
    lifecycle = LifecycleRunner.of(
        app.settings.lifecycle, app.store, app.tables.lifecycle,
        [*service_passes(app.settings.lifecycle, app.services), *passes], app.outputs)
    stage = DedupStage(app.store, app.services.embed, app.services.llm, app.outputs,
                       record_scope=event_scope_of,
                       lifecycle=lifecycle if app.settings.lifecycle.lifecycle_enabled else None,
                       proactivity=ProactivityPolicy.of(app.settings.proactivity))
    within = app.settings.dedup.dedup_batch_within_ms / 1000

    async def dedup(stream):  # type: ignore[no-untyped-def]
        """Consume `memory.candidates` in small batches (one embedding call each); yields each
        outcome."""
        async for events in stream.take_events(app.settings.dedup.dedup_batch_size, within=within):
            for outcome in await stage.handle_batch([record_of(e) for e in events]):
                yield outcome

    return app.faust.agent(app.topics.candidates, name="dedup")(dedup)
