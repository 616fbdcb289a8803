"""`MemstreamClient`: the blocking client, for code without an event loop (a WSGI chat backend,
a script). It runs an `AsyncMemstreamClient` on an event loop of its own, in a daemon thread."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterable, Iterator
from concurrent.futures import Future
from contextlib import suppress
from typing import TYPE_CHECKING, Any, TypeVar

from streams.client.aio import AsyncMemstreamClient, Mode
from streams.client.models import Delivery, QueryResult, StreamReset
from topics.events import MemoryEvent
from topics.proactivity import ProactivityCandidate
from topics.turns import Turn

if TYPE_CHECKING:
    from streams.settings import Settings

T = TypeVar("T")


class _LoopThread:
    """An event loop running in a daemon thread; coroutines are run on it and waited for."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="memstream-client",
                                        daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # interrupted (Ctrl-C): the coroutine stops too
            raise

    def iterate(self, stream: AsyncIterator[T]) -> Iterator[T]:
        async def step() -> tuple[bool, T | None]:
            try:
                return True, await stream.__anext__()
            except StopAsyncIteration:
                return False, None

        try:
            while True:
                more, item = self.run(step())
                if not more:
                    return
                yield item  # type: ignore[misc]
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None and self.loop.is_running():
                with suppress(Exception):
                    self.run(aclose())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class MemstreamClient:
    """memstream's blocking client: the same calls as `AsyncMemstreamClient` (see there), each
    returning when done; `watch` and `proactivity` are iterators. Use `with` (or `close`).
    Safe to share between threads."""

    def __init__(self, broker: str | None = None, api_url: str | None = None,
                 api_key: str | None = None, **options: Any) -> None:
        self._loop = _LoopThread()
        self._client = AsyncMemstreamClient(broker, api_url, api_key, **options)

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **options: Any) -> "MemstreamClient":
        """A client of the local service as memstream's settings describe it (see
        `AsyncMemstreamClient.from_settings`)."""
        client = cls()
        client._client = AsyncMemstreamClient.from_settings(settings, **options)
        return client

    def __enter__(self) -> "MemstreamClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Deliver the turns still queued, end open streams, stop the client's thread."""
        if self._loop.loop.is_closed():
            return
        try:
            self._loop.run(self._client.close())
        finally:
            self._loop.stop()

    def send_turn(self, turn: Turn) -> Delivery:
        """Produce one turn; returns once it is acknowledged."""
        return self._loop.run(self._client.send_turn(turn))

    def send_turns(self, turns: Iterable[Turn]) -> list[Delivery]:
        """Produce turns in order (batched); returns once every one is acknowledged."""
        return self._loop.run(self._client.send_turns(list(turns)))

    def flush(self) -> None:
        self._loop.run(self._client.flush())

    def query(self, user_id: str, query: str, *, agent: str = "supervisor",
              top_k: int | None = None, mode: Mode = "bullets", **fields: Any) -> QueryResult:
        """`memory.query` as `agent` (see `AsyncMemstreamClient.query`)."""
        return self._loop.run(self._client.query(user_id, query, agent=agent, top_k=top_k,
                                                 mode=mode, **fields))

    def watch(self, user_id: str, *, last_event_id: str | None = None, replay: bool = False,
              reconnect: bool = True) -> Iterator[MemoryEvent | StreamReset]:
        """The user's memory events as they happen (see `AsyncMemstreamClient.watch`)."""
        return self._loop.iterate(self._client.watch(
            user_id, last_event_id=last_event_id, replay=replay, reconnect=reconnect))

    def proactivity(self, *, user_id: str | None = None, group_id: str | None = None,
                    from_beginning: bool = False) -> Iterator[ProactivityCandidate]:
        """Proactivity candidates (see `AsyncMemstreamClient.proactivity`)."""
        return self._loop.iterate(self._client.proactivity(
            user_id=user_id, group_id=group_id, from_beginning=from_beginning))
