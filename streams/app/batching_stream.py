"""The worker's Faust stream: its batches wait for their first record without a timeout.

Faust's `Stream.take_events(max_, within)` waits up to `within` for its buffer to fill and, when
that wait ends with the buffer still empty, starts the same wait again: an idle stage woke every
`within`, 5 ms for ingest and 20 ms for dedup and the SSE stage, each time making three tasks to
wait on (the buffer, the stream's stop, its crash). An idle worker's event loop woke about 270
times a second and spent 14.5 ms of CPU a second doing it, and so did a worker in a steady chat,
whose stages are idle between turns most of the time.

`BatchingStream.take_events` is Faust's (faust-streaming 0.11's `streams.py`, the same buffer,
acks and cleanup) but for the wait: while the buffer is empty it waits for the first record with
no timeout, and from then up to `within` for the batch to fill. A lone record now waits
`within` from its arrival, where it waited from none to `within` (the rest of the current
poll); a backlog fills its batches as before (docs/decisions.md#batches-wait-for-their-first-record).
"""
from __future__ import annotations

import asyncio
from asyncio import CancelledError
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import faust
from faust.streams import _tracks_buffer_agen
from faust.types import EventT
from mode import Seconds, want_seconds
from mode.utils.aiter import aiter
from mode.utils.futures import notify


class BatchingStream(faust.Stream):  # type: ignore[misc]  # faust.Stream is generic in Faust's stubs only
    """A Faust stream whose `take_events` does not poll while idle (module doc)."""

    @_tracks_buffer_agen
    async def take_events(self, max_: int, within: Seconds) -> AsyncGenerator[Sequence[EventT], None]:
        """Faust's `take_events`: lists of up to `max_` events, each list once it is full or
        `within` after its first event came (module doc); the events are acked after the
        caller is done with their list."""
        buffer: list[Any] = []
        events: list[EventT] = []
        buffer_full = asyncio.Event()
        buffer_consumed = asyncio.Event()
        buffer_started = asyncio.Event()
        timeout = want_seconds(within) if within else None
        stream_enable_acks: bool = self.enable_acks
        buffer_consuming: asyncio.Future[Any] | None = None
        channel_it = aiter(self.channel)

        async def add_to_buffer(value: Any) -> Any:
            nonlocal buffer_consuming
            try:
                if buffer_consuming is not None:  # the caller is still on the last list
                    try:
                        await buffer_consuming
                    finally:
                        buffer_consuming = None
                buffer.append(value)
                event = self.current_event
                if event is None:
                    raise RuntimeError("Take buffer found current_event is None")
                events.append(event)
                buffer_started.set()
                if len(buffer) >= max_:
                    buffer_full.set()
                    buffer_consumed.clear()
                    await self.wait(buffer_consumed)  # never more than max_ in a list
            except CancelledError:  # pragma: no cover - as Faust's
                raise
            except Exception as exc:  # noqa: BLE001 - as Faust's: the stream crashes with it
                self.log.exception("Error adding to take buffer: %r", exc)
                await self.crash(exc)
            return value

        self.enable_acks = False  # acked below, once the caller is done with the list
        self.add_processor(add_to_buffer)
        self._enable_passive(channel_it)
        try:
            while not self.should_stop:
                if not buffer:
                    await self.wait_for_stopped(buffer_started)  # idle: no timeout, no polling
                await self.wait_for_stopped(buffer_full, timeout=timeout)
                if buffer:
                    buffer_consuming = self.loop.create_future()
                    try:
                        yield list(events)
                    finally:
                        buffer.clear()
                        for event in events:
                            await self.ack(event)
                        events.clear()
                        notify(buffer_consuming)  # the records held back go in the next list
                        buffer_full.clear()
                        buffer_started.clear()
                        buffer_consumed.set()
        finally:
            self.enable_acks = stream_enable_acks
            self._processors.remove(add_to_buffer)
