"""`MemstreamClient`: the blocking client, for code without an event loop (a WSGI chat backend,
a script). It runs an `AsyncMemstreamClient` on an event loop of its own, in a daemon thread."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterable, Iterator
from concurrent.futures import Future
from contextlib import suppress
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from streams.api.registry_models import AuditEntry, Export, MemoryView, WriteResult
from streams.client.aio import AsyncMemstreamClient, Mode
from streams.client.models import AddResult, Delivery, MemoryPage, QueryResult, StreamReset, TurnResult
from streams.client.registry import FORGET_TOP_K, LIST_PAGE
from topics.events import MemoryEvent
from topics.proactivity import ProactivityCandidate
from topics.query import FullItem
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
        async def step() -> tuple[T, ...]:
            """The stream's next item, alone; nothing when it is done."""
            try:
                return (await stream.__anext__(),)
            except StopAsyncIteration:
                return ()

        try:
            while True:
                got = self.run(step())
                if not got:
                    return
                yield got[0]
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

    @overload
    def send_turn(self, turn: Turn, *, wait: Literal[False] = False,
                  timeout: float | None = None) -> Delivery: ...

    @overload
    def send_turn(self, turn: Turn, *, wait: Literal[True], timeout: float | None = None) -> TurnResult: ...

    def send_turn(self, turn: Turn, *, wait: bool = False,
                  timeout: float | None = None) -> Delivery | TurnResult:
        """Produce one turn; returns once it is acknowledged (with `wait`: once it is applied,
        with the memories it made or changed; see `AsyncMemstreamClient.send_turn`)."""
        return self._loop.run(self._client.send_turn(turn, wait=wait, timeout=timeout))  # type: ignore[call-overload]  # wait is any bool here; the overloads name its literals

    def send_turns(self, turns: Iterable[Turn], *, wait: bool = False,
                   timeout: float | None = None) -> list[Delivery] | list[TurnResult]:
        """Produce turns in order (batched); returns once every one is acknowledged (with
        `wait`: applied)."""
        return self._loop.run(self._client.send_turns(list(turns), wait=wait, timeout=timeout))  # type: ignore[call-overload]  # wait is any bool here; the overloads name its literals

    def add(self, messages: Iterable[Any], user_id: str, thread_id: str, *,
            speaker: str | None = None, assistant: str | None = None, ts: datetime | None = None,
            wait: bool = True, timeout: float | None = None, **fields: Any) -> AddResult:
        """A conversation's messages as turns; the memories they made once applied (see
        `AsyncMemstreamClient.add`)."""
        return self._loop.run(self._client.add(
            list(messages), user_id, thread_id, speaker=speaker, assistant=assistant, ts=ts,
            wait=wait, timeout=timeout, **fields))

    def flush(self) -> None:
        self._loop.run(self._client.flush())

    def query(self, user_id: str, query: str, *, agent: str = "supervisor",
              top_k: int | None = None, mode: Mode = "bullets", **fields: Any) -> QueryResult:
        """`memory.query` as `agent` (see `AsyncMemstreamClient.query`)."""
        return self._loop.run(self._client.query(user_id, query, agent=agent, top_k=top_k,
                                                 mode=mode, **fields))

    def search(self, user_id: str, query: str, *, agent: str = "supervisor",
               top_k: int | None = None, threshold: float | None = None,
               **fields: Any) -> list[FullItem]:
        """The user's memories that answer `query`, best first (see `RegistryCalls.search`)."""
        return self._loop.run(self._client.search(user_id, query, agent=agent, top_k=top_k,
                                                  threshold=threshold, **fields))

    def get(self, user_id: str, memory_id: str) -> MemoryView | None:
        """One memory, None when there is none the key may see."""
        return self._loop.run(self._client.get(user_id, memory_id))

    def memories(self, user_id: str, *, category: str | list[str] | None = None,
                 state: str | None = None, pinned: bool | None = None, text: str | None = None,
                 thread_id: str | None = None, limit: int = LIST_PAGE, offset: int = 0) -> MemoryPage:
        """One page of the user's memories, newest first (see `RegistryCalls.memories`)."""
        return self._loop.run(self._client.memories(
            user_id, category=category, state=state, pinned=pinned, text=text,
            thread_id=thread_id, limit=limit, offset=offset))

    def history(self, user_id: str, memory_id: str) -> list[AuditEntry]:
        """The memory's audit trail, oldest first."""
        return self._loop.run(self._client.history(user_id, memory_id))

    def export(self, user_id: str) -> Export:
        """Everything kept about the user that the key may see."""
        return self._loop.run(self._client.export(user_id))

    def update(self, user_id: str, memory_id: str, text: str, *, wait: bool = True,
               idempotency_key: str | None = None) -> WriteResult:
        """Replace the memory's summary (see `RegistryCalls.update`)."""
        return self._loop.run(self._client.update(user_id, memory_id, text, wait=wait,
                                                  idempotency_key=idempotency_key))

    def delete(self, user_id: str, memory_id: str, *, wait: bool = True,
               idempotency_key: str | None = None) -> WriteResult:
        """Soft-delete the memory (restorable)."""
        return self._loop.run(self._client.delete(user_id, memory_id, wait=wait,
                                                  idempotency_key=idempotency_key))

    def restore(self, user_id: str, memory_id: str, *, wait: bool = True,
                idempotency_key: str | None = None) -> WriteResult:
        """Bring back a soft-deleted or archived memory."""
        return self._loop.run(self._client.restore(user_id, memory_id, wait=wait,
                                                   idempotency_key=idempotency_key))

    def pin(self, user_id: str, memory_id: str, pinned: bool = True, *, wait: bool = True,
            idempotency_key: str | None = None) -> WriteResult:
        """Pin (or unpin) the memory."""
        return self._loop.run(self._client.pin(user_id, memory_id, pinned, wait=wait,
                                               idempotency_key=idempotency_key))

    def forget(self, user_id: str, query: str | None = None, *, agent: str = "supervisor",
               top_k: int = FORGET_TOP_K, threshold: float | None = None,
               wait: bool = True) -> WriteResult:
        """Soft-delete what `query` describes, or every active memory without one (see
        `RegistryCalls.forget`)."""
        return self._loop.run(self._client.forget(user_id, query, agent=agent, top_k=top_k,
                                                  threshold=threshold, wait=wait))

    def purge_user(self, user_id: str, *, wait: bool = True,
                   idempotency_key: str | None = None) -> WriteResult:
        """Remove everything of the user for good (admin key)."""
        return self._loop.run(self._client.purge_user(user_id, wait=wait,
                                                      idempotency_key=idempotency_key))

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

    # mem0's name for the list of a user's memories; defined last, so `list` in the
    # annotations above stays the builtin
    list = memories
