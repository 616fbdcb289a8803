"""The clients connected to this worker's event streams (`streams.api.sse`), by user, and how
many it serves at once. Built by the web layer (`streams.api.state.WebState`); the stages
publish to it through `StageListeners.events`."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from streams.api.connections import max_event_streams
from streams.errors import MemstreamError
from streams.settings import ApiSettings

END_OF_STREAM = object()
"""What a subscriber's queue yields when its stream must end (closed, or too far behind)."""


class TooManyStreams(MemstreamError):
    """One more event stream would pass a limit of `StreamLimits`; answered 429."""


@dataclass(frozen=True)
class StreamLimits:
    """How many event streams a worker serves at once: in all, and for one user."""

    total: int
    per_user: int

    @classmethod
    def of(cls, api: ApiSettings) -> "StreamLimits":
        """SSE_MAX_STREAMS (within its share of the web server's connections:
        `streams.api.connections.max_event_streams`) and SSE_MAX_STREAMS_PER_USER."""
        return cls(max_event_streams(api), api.sse_max_streams_per_user)


class Subscriber:
    """One connected client: its queue of events, closed when it falls too far behind."""

    def __init__(self, limit: int) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.limit = limit

    def offer(self, event: dict[str, Any]) -> bool:
        """Queue an event; False (and the stream ends) when the client is too far behind."""
        if self.queue.qsize() >= self.limit:
            self.close()
            return False
        self.queue.put_nowait(event)
        return True

    def close(self) -> None:
        self.queue.put_nowait(END_OF_STREAM)


class Hub:
    """The clients connected to this worker, by user; each may fall `limit` events behind."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._subscribers: dict[str, set[Subscriber]] = {}

    def streams(self, user_id: str | None = None) -> int:
        """Clients connected now: of `user_id`, or of every user."""
        if user_id is not None:
            return len(self._subscribers.get(user_id, ()))
        return sum(len(subscribers) for subscribers in self._subscribers.values())

    def subscribe(self, user_id: str, limits: StreamLimits | None = None) -> Subscriber:
        """A new client of `user_id`; raises `TooManyStreams` when it would pass `limits`."""
        if limits is not None:
            if self.streams() >= limits.total:
                raise TooManyStreams(f"this worker serves {limits.total} event streams already")
            if self.streams(user_id) >= limits.per_user:
                raise TooManyStreams(f"this user has {limits.per_user} event streams open already")
        subscriber = Subscriber(self.limit)
        self._subscribers.setdefault(user_id, set()).add(subscriber)
        return subscriber

    def unsubscribe(self, user_id: str, subscriber: Subscriber) -> None:
        subscribers = self._subscribers.get(user_id, set())
        subscribers.discard(subscriber)
        if not subscribers:
            self._subscribers.pop(user_id, None)

    def publish(self, user_id: str, event: dict[str, Any]) -> None:
        for subscriber in list(self._subscribers.get(user_id, ())):
            if not subscriber.offer(event):
                self.unsubscribe(user_id, subscriber)

    def close_all(self) -> None:
        for user_id, subscribers in list(self._subscribers.items()):
            for subscriber in subscribers:
                subscriber.close()
            self._subscribers.pop(user_id, None)
