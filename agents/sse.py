"""Stage — sse: `memory.events` → each user's recent events (`recent_events` table) and the
worker's connected SSE clients (`streams.api.sse`)."""
from __future__ import annotations

import logging

from faust.types import AgentT
from pydantic import ValidationError

from streams.api.sse import remember
from streams.app.factory import MemstreamApp
from streams.observability.logs import describe_failure
from streams.privacy.crypto import SealError
from streams.privacy.payloads import open_event
from topics.events import MemoryEvent

log = logging.getLogger(__name__)


def register(app: MemstreamApp) -> AgentT:
    recent = app.sealed.recent_events
    sealer = app.sealed.sealer
    size = app.settings.sse_replay_events

    async def sse(stream):  # type: ignore[no-untyped-def]
        """Buffer each user's recent events and fan them out to connected clients; yields once
        per record (the event id, None for a record skipped)."""
        async for value in stream:
            try:
                event = open_event(sealer, MemoryEvent.model_validate_json(value))
            except (ValidationError, ValueError, RecursionError):
                log.warning("sse: skipped a memory.events record that is not a MemoryEvent")
                yield None
                continue
            except SealError:  # the user was purged since: nothing of it is shown again
                yield None
                continue
            try:
                buffer = remember(list(recent.get(event.user_id) or []), event, size)
                if buffer is not None:
                    recent[event.user_id] = buffer
                    app.hub.publish(event.user_id, buffer[-1])
            except Exception as exc:  # noqa: BLE001 - one event never stops the partition
                log.error("sse: event %s not buffered: %s", event.event_id, describe_failure(exc))
            yield event.event_id

    return app.faust.agent(app.topics.events, name="sse")(sse)
