"""Stage — sse: `memory.events` → each user's recent events (`recent_events` table) and the
worker's connected SSE clients (`streams.api.sse`)."""
from __future__ import annotations

import logging

from faust.types import AgentT, EventT
from pydantic import ValidationError

from streams.api.recent_events import RecentEvents
from streams.app.factory import MemstreamApp
from streams.app.faust_compat import event_scope
from streams.observability.logs import describe_failure
from streams.privacy.crypto import SealError
from streams.privacy.payloads import open_event
from topics.events import MemoryEvent

log = logging.getLogger(__name__)


def register(app: MemstreamApp) -> AgentT:
    recent = RecentEvents(app.sealed.recent_events, app.settings.api.sse_replay_events)
    sealer = app.sealed.sealer
    within = app.settings.api.sse_batch_within_ms / 1000

    def opened(value: bytes) -> MemoryEvent | None:
        try:
            return open_event(sealer, MemoryEvent.model_validate_json(value))
        except (ValidationError, ValueError, RecursionError):
            log.warning("sse: skipped a memory.events record that is not a MemoryEvent")
        except SealError:  # the user was purged since: nothing of it is shown again
            pass
        return None

    def buffer_events(user_id: str, events: list[MemoryEvent]) -> None:
        """Add a user's events of one batch to the user's buffer (one chunk of the ring,
        `streams.api.recent_events`), and publish each new one to the user's connected clients."""
        for entry in recent.add(user_id, events):
            app.hub.publish(user_id, entry)

    async def sse(stream):  # type: ignore[no-untyped-def]
        """Buffer each user's recent events and fan them out to connected clients, in batches
        (a user's buffer is read and written once per batch, not once per event); yields once
        per record (the event id, None for a record skipped)."""
        async for batch in stream.take_events(app.settings.api.sse_batch_size, within=within):
            by_user: dict[str, list[MemoryEvent]] = {}
            last_of: dict[str, EventT] = {}
            ids: list[str | None] = []
            for record in batch:
                event = opened(record.value)
                ids.append(event.event_id if event is not None else None)
                if event is not None:
                    by_user.setdefault(event.user_id, []).append(event)
                    # The buffer's write goes to the partition of the user's last record.
                    last_of[event.user_id] = record
            for user_id, events in by_user.items():
                try:
                    with event_scope(last_of[user_id]):
                        buffer_events(user_id, events)
                except Exception as exc:  # noqa: BLE001 - one event never stops the partition
                    log.error("sse: %d events of a user not buffered: %s", len(events),
                              describe_failure(exc))
            for event_id in ids:
                yield event_id

    return app.faust.agent(app.topics.events, name="sse")(sse)
