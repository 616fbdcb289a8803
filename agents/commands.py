"""Stage — commands: `memory.commands` (chat hot path, registry, admin) → `memory.events`.

The work is `streams.pipeline.commands.CommandsStage`.
"""
from __future__ import annotations

from faust.types import AgentT

from streams.app.factory import MemstreamApp
from streams.app.faust_compat import record_of
from streams.pipeline.commands import CommandsStage


def register(app: MemstreamApp) -> AgentT:
    stage = CommandsStage(app.settings, app.store, app.services.embed, app.outputs,
                          observer=app.command_waiter)

    async def commands(stream):  # type: ignore[no-untyped-def]
        """Consume `memory.commands`; yields each outcome."""
        async for event in stream.events():
            yield await stage.handle(record_of(event))

    return app.faust.agent(app.topics.commands, name="commands")(commands)
