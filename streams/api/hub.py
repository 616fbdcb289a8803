"""The clients connected to this worker's event streams (`streams.api.sse`), by user, and how
many it serves at once. Built by the web layer (`streams.api.state.WebState`); the stages
publish to it through `StageListeners.events`.

The streams are counted so that no key can take the others' share (`StreamLimits`,
docs/decisions.md#event-streams-per-key):

- in all: `SSE_MAX_STREAMS`, within its share of the web server's connections;
- per key: `SSE_MAX_STREAMS_PER_KEY` (0: half of the worker's), never all of the worker's;
- per key and user: `SSE_MAX_STREAMS_PER_USER`, each key its own count, so a key limited to one
  user cannot fill that user's streams and lock its admin out;
- streams of users with no data yet (no memory, no buffered event: a user id anyone may invent)
  take at most `NEW_USER_SHARE` of the worker's, and one key at most half of those: ids that
  name nobody cannot exhaust the streams of the users who exist.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any

from streams.api.connections import max_event_streams
from streams.errors import MemstreamError
from streams.settings import ApiSettings

END_OF_STREAM = object()
"""What a subscriber's queue yields when its stream must end (closed, or too far behind)."""
RECHECK = object()
"""What a subscriber's queue yields when the API keys or the category allowlists changed: the
stream judges its key again before it sends anything more (`streams.api.sse.StreamAccess`)."""
NEW_USER_SHARE = 0.25
"""The share of the worker's event streams that streams of users with no data yet may take."""


class TooManyStreams(MemstreamError):
    """One more event stream would pass a limit of `StreamLimits`; answered 429."""


@dataclass(frozen=True)
class StreamLimits:
    """How many event streams a worker serves at once: in all (`total`), for one key and user
    (`per_user`), for one key (`per_key`, 0: half of `total`)."""

    total: int
    per_user: int
    per_key: int = 0

    @classmethod
    def of(cls, api: ApiSettings) -> "StreamLimits":
        """SSE_MAX_STREAMS (within its share of the web server's connections:
        `streams.api.connections.max_event_streams`), SSE_MAX_STREAMS_PER_USER and
        SSE_MAX_STREAMS_PER_KEY."""
        return cls(max_event_streams(api), api.sse_max_streams_per_user, api.sse_max_streams_per_key)

    @property
    def key_share(self) -> int:
        """Streams one key may hold in all: `per_key` (0: half of `total`), never all of `total`
        while there is more than one."""
        wanted = self.per_key or self.total // 2
        return max(1, min(wanted, self.total - 1))

    @property
    def new_users(self) -> int:
        """Streams of users with no data yet, of every key: `NEW_USER_SHARE` of `total`."""
        return max(1, int(self.total * NEW_USER_SHARE))

    @property
    def new_users_per_key(self) -> int:
        """Streams of users with no data yet one key may hold: half of `new_users`."""
        return max(1, self.new_users // 2)


class Subscriber:
    """One connected client: its queue of events, closed when it falls too far behind; the key
    it came with (its hash) and whether its user had data when it came, as it was counted."""

    def __init__(self, limit: int, key: str = "", new_user: bool = False) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.limit = limit
        self.key = key
        self.new_user = new_user

    def offer(self, event: dict[str, Any]) -> bool:
        """Queue an event; False (and the stream ends) when the client is too far behind."""
        if self.queue.qsize() >= self.limit:
            self.close()
            return False
        self.queue.put_nowait(event)
        return True

    def recheck(self) -> None:
        """Have the stream judge its key again (`RECHECK`), whatever its queue holds."""
        self.queue.put_nowait(RECHECK)

    def close(self) -> None:
        self.queue.put_nowait(END_OF_STREAM)


class Hub:
    """The clients connected to this worker, by user; each may fall `limit` events behind."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._subscribers: dict[str, set[Subscriber]] = {}
        self._by_key: Counter[str] = Counter()
        self._by_key_user: Counter[tuple[str, str]] = Counter()
        self._new_by_key: Counter[str] = Counter()

    def streams(self, user_id: str | None = None) -> int:
        """Clients connected now: of `user_id`, or of every user."""
        if user_id is not None:
            return len(self._subscribers.get(user_id, ()))
        return sum(len(subscribers) for subscribers in self._subscribers.values())

    def streams_of_key(self, key: str, user_id: str | None = None) -> int:
        """Clients connected now with `key` (its hash): of `user_id`, or of every user."""
        return self._by_key[key] if user_id is None else self._by_key_user[key, user_id]

    def new_user_streams(self, key: str | None = None) -> int:
        """Clients connected now to users that had no data when they came: of `key`, or all."""
        return self._new_by_key[key] if key is not None else sum(self._new_by_key.values())

    def subscribe(self, user_id: str, limits: StreamLimits | None = None, *, key: str = "",
                  new_user: bool = False) -> Subscriber:
        """A new client of `user_id` with `key` (its hash); raises `TooManyStreams` when it
        would pass `limits`. `new_user`: the user has no data yet (`StreamLimits.new_users`)."""
        if limits is not None:
            self._check(user_id, limits, key, new_user)
        subscriber = Subscriber(self.limit, key, new_user)
        self._subscribers.setdefault(user_id, set()).add(subscriber)
        self._count(user_id, subscriber, 1)
        return subscriber

    def _check(self, user_id: str, limits: StreamLimits, key: str, new_user: bool) -> None:
        if self.streams() >= limits.total:
            raise TooManyStreams(f"this worker serves {limits.total} event streams already")
        if self._by_key[key] >= limits.key_share:
            raise TooManyStreams(f"this key holds {limits.key_share} event streams on this worker already")
        if self._by_key_user[key, user_id] >= limits.per_user:
            raise TooManyStreams(f"this key has {limits.per_user} event streams of this user open already")
        if new_user and (self.new_user_streams() >= limits.new_users
                         or self._new_by_key[key] >= limits.new_users_per_key):
            # worded like no other limit: whether a user has data is not the caller's to learn
            raise TooManyStreams("too many event streams open on this worker now")

    def _count(self, user_id: str, subscriber: Subscriber, step: int) -> None:
        _bump(self._by_key, subscriber.key, step)
        _bump(self._by_key_user, (subscriber.key, user_id), step)
        if subscriber.new_user:
            _bump(self._new_by_key, subscriber.key, step)

    def unsubscribe(self, user_id: str, subscriber: Subscriber) -> None:
        """The client left (or was dropped); a second call for it changes nothing."""
        subscribers = self._subscribers.get(user_id, set())
        if subscriber in subscribers:
            subscribers.discard(subscriber)
            self._count(user_id, subscriber, -1)
        if not subscribers:
            self._subscribers.pop(user_id, None)

    def publish(self, user_id: str, event: dict[str, Any]) -> None:
        for subscriber in list(self._subscribers.get(user_id, ())):
            if not subscriber.offer(event):
                self.unsubscribe(user_id, subscriber)

    def recheck_all(self) -> None:
        """Have every open stream judge its key again (the keys or the allowlists changed)."""
        for subscribers in self._subscribers.values():
            for subscriber in subscribers:
                subscriber.recheck()

    def close_all(self) -> None:
        for user_id, subscribers in list(self._subscribers.items()):
            for subscriber in subscribers:
                subscriber.close()
            self._subscribers.pop(user_id, None)
        self._by_key.clear()
        self._by_key_user.clear()
        self._new_by_key.clear()


def _bump(counter: Counter[Any], name: Any, step: int) -> None:
    counter[name] += step
    if counter[name] <= 0:
        del counter[name]
