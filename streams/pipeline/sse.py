"""The sse stage: `memory.events` → each user's recent events (the `recent_events` table, a ring:
`streams.pipeline.recent_events`) and whoever listens for them (the worker's connected SSE
clients: `streams.api.hub.Hub`)."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from streams.observability.logs import describe_failure
from streams.pipeline.records import Record, RecordScope, no_scope
from streams.pipeline.recent_events import RecentEvents
from streams.privacy.payloads import open_events
from streams.privacy.sealed import Sealer
from topics.events import MemoryEvent
from topics.events_wire import events_of

log = logging.getLogger(__name__)

EventListener = Callable[[str, dict[str, Any]], None]
"""listener(user_id, event): told of each new event a user's buffer took."""


class SseStage:
    """Memory events in, each user's replay buffer and its listener out."""

    def __init__(self, recent: RecentEvents, sealer: Sealer, listener: EventListener | None = None,
                 record_scope: RecordScope = no_scope) -> None:
        """`record_scope` is the scope a user's buffer write is made in (that of the user's last
        record of the batch: the write goes to its partition)."""
        self.recent = recent
        self.sealer = sealer
        self.listener = listener
        self.record_scope = record_scope

    def opened(self, value: bytes | None) -> list[MemoryEvent]:
        """The record's events, opened (`topics.events_wire.events_of`); none for a record that is
        not a `memory.events` record. Events sealed for a user purged since are left out:
        nothing of them is shown again (`open_events`)."""
        try:
            return open_events(self.sealer, events_of(value))
        except (ValidationError, ValueError, RecursionError):
            log.warning("sse: skipped a memory.events record that is not a list of MemoryEvents")
        return []

    def buffer_events(self, user_id: str, events: list[MemoryEvent]) -> None:
        """Add a user's events of one batch to the user's buffer (one chunk of the ring), and
        tell the listener of each new one."""
        for entry in self.recent.add(user_id, events):
            if self.listener is not None:
                self.listener(user_id, entry)

    async def handle_batch(self, records: Sequence[Record]) -> list[list[str]]:
        """Buffer each user's events of the batch (a user's buffer is read and written once per
        batch, not once per event); the event ids of each record (none for one skipped).

        Never raises: a user's events that cannot be buffered are logged without content.
        """
        by_user: dict[str, list[MemoryEvent]] = {}
        last_of: dict[str, Record] = {}
        ids: list[list[str]] = []
        for record in records:
            events = self.opened(record.value)
            ids.append([event.event_id for event in events])
            for event in events:
                by_user.setdefault(event.user_id, []).append(event)
                last_of[event.user_id] = record
        for user_id, events in by_user.items():
            try:
                with self.record_scope(last_of[user_id]):
                    self.buffer_events(user_id, events)
            except Exception as exc:  # noqa: BLE001 - one event never stops the partition
                log.error("sse: %d events of a user not buffered: %s", len(events),
                          describe_failure(exc))
        return ids
