"""`MemstreamStore`: LangGraph's `BaseStore` over memstream's client (docs/langgraph-store.md).

    store = MemstreamStore.from_settings(agent="planner")       # or (api_url, api_key, agent, broker=)
    store.put(("memories", "ana"), "goal", {"text": "I want to run a marathon in October."})
    store.get(("memories", "ana"), "goal").key                  # "goal"
    store.search(("memories", "ana"), query="What is Ana training for?", limit=3)

- a namespace is `(prefix, user_id, *tail)`: the user is the second label; a put's tail and key
  name its chat thread (`streams.client.langgraph_mapping.thread_for`), so every item a put
  made carries its namespace and key back, in any store. A memory no store made (said in chat)
  is an item of `(prefix, user_id)` keyed by its memory id.
- a put is a chat turn "Remember that <text>" in that thread, sent with the client's
  `send_turn(wait=True)`: memstream writes the memory in its own words ("The user wants …") and
  decides its type and category. The same value put again is the same turn (a replay: nothing
  changes, the summary stays memstream's); a changed value is a new turn, whose memory replaces
  the key's (the old one is deleted unless memstream merged the two).
- an item's value is the memory document (without its id), not the value put.
- TTL: a put's TTL (minutes; `ttl=` or TTLConfig's `default_ttl`) rides in its turn id; an item
  expires that long after its last write or read, reads refresh it (`refresh_ttl`, TTLConfig's
  `refresh_on_read`), an expired item is never answered and is deleted when a read or
  `sweep_ttl` meets it.

Every call goes through one `MemstreamClient`: the blocking API on its loop thread, the async API
awaiting the same loop, so one client (one producer, one progress follower) serves both.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from streams.client.aio import AsyncMemstreamClient
from streams.client.errors import ApiError, ApplyTimeout, ConfigurationError, PermissionDenied, Rejected
from streams.client.langgraph_mapping import (
    MissingTextError,
    StoreError,
    UnsupportedNamespaceError,
    expires_at,
    item_name,
    legacy_thread_of,
    list_params,
    matches,
    query_filters,
    text_of,
    thread_for,
    ttl_of,
    turn_of,
)
from streams.client.sync import MemstreamClient
from streams.memory.access import touch
from topics.names import MEMORY_COMMANDS
from topics.turns import Role, Turn

LIVE_STATES = ("active", "archived")
"""The states of a memory that is an item; a soft-deleted one is restored by a put."""
STORED = ("created", "updated", "superseded", "duplicate")
"""Outcomes of a remembered fact that leave it in a memory (`topics.progress`)."""
PAGE = 500
"""Memories per registry page when the store reads a user's whole list (namespaces, sweeps)."""
StoreApiError = ApiError
"""The API answered an error (`status`, `message`): the client's `ApiError` and its subclasses."""

__all__ = ["MemstreamStore", "MissingTextError", "NotStoredError", "OutOfScopeError", "StoreApiError",
           "StoreError", "UnsupportedNamespaceError", "WriteNotAppliedError"]


class NotStoredError(StoreError):
    """memstream kept nothing of a put (`outcome`: skipped, blocked, dlq, ...)."""

    def __init__(self, key: str, outcome: str) -> None:
        super().__init__(f"memstream stored nothing for key {key!r} (outcome: {outcome})")
        self.outcome = outcome


class WriteNotAppliedError(StoreError):
    """A write was not applied in time or was rejected, or a delete left the memory live."""


class OutOfScopeError(StoreError):
    """memstream stored the put, but in a category the store's key may not see: the store cannot
    read it back, change or delete it (raised each time that value is put, and by a delete of
    the key). Give the store a key whose scope has the category."""

    def __init__(self, key: str, outcome: str) -> None:
        super().__init__(f"memstream stored the put of key {key!r} ({outcome}) in a category this "
                         f"API key may not see: it cannot be read, changed or deleted through it")
        self.outcome = outcome


class MemstreamStore(BaseStore):
    """LangGraph's store over a memstream worker (see the module docstring)."""

    supports_ttl = True

    def __init__(self, api_url: str | None = None, api_key: str | None = None,
                 agent: str = "supervisor", *, broker: str | None = None,
                 client: MemstreamClient | None = None, prefix: str = "memories",
                 users: Sequence[str] = (), ttl: TTLConfig | None = None,
                 budget_tokens: int | None = None, threshold: float | None = None,
                 record_access: bool = True, timeout_s: float = 30.0,
                 clock: Callable[[], datetime] | None = None) -> None:
        """`client` (else one of `api_url`, `api_key`, `broker`): what the store calls;
        `agent`: whose allowlist memory.query applies; `users`: where `list_namespaces` and
        `sweep_ttl` look besides the users named and written; `ttl`: LangGraph's TTLConfig
        (`default_ttl` minutes, `refresh_on_read`, `sweep_interval_minutes`); `record_access`:
        whether a search refreshes what it returns (memory.query's, and TTLs); `timeout_s`: one
        request, or one put waiting for its turn; `clock`: the time TTLs are read against."""
        self.client = client or _client_of(broker, api_url, api_key, timeout_s)
        self.agent = agent
        self.prefix = prefix
        self.users = tuple(users)
        self.ttl_config = ttl
        self.budget_tokens = budget_tokens
        self.threshold = threshold
        self.record_access = record_access
        self.timeout_s = timeout_s
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self._written: dict[str, None] = {}
        """Users this store put to: `list_namespaces` and `sweep_ttl` look there too."""
        self._remembered: dict[tuple[str, str], str] = {}
        """(user, thread) -> the memory a put in that thread became here."""
        self._sweeper: asyncio.Task[None] | None = None

    @classmethod
    def from_settings(cls, agent: str = "supervisor", **options: Any) -> "MemstreamStore":
        """A store of the local service as memstream's settings describe it (the CLI's key)."""
        client_options = {k: options.pop(k) for k in ("settings",) if k in options}
        return cls(agent=agent, client=MemstreamClient.from_settings(client_options.get("settings")),
                   **options)

    def close(self) -> None:
        """Stop the sweeper, close the client."""
        self.stop_ttl_sweeper()
        self.client.close()

    @property
    def _aio(self) -> AsyncMemstreamClient:
        return self.client._client  # the client package's own: the async client on its loop

    # --- the entry points ----------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self.client._loop.run(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        future = asyncio.run_coroutine_threadsafe(self._batch(list(ops)), self.client._loop.loop)
        return await asyncio.wrap_future(future)

    async def _batch(self, ops: list[Op]) -> list[Result]:
        """Ops in order, one after another: a read after a write in the batch sees it."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, PutOp):
                results.append(await self._put(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            else:
                raise TypeError(f"unknown op {type(op).__name__}")
        return results

    # --- names ------------------------------------------------------------------------------

    def split(self, namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        """(user, tail) of `(prefix, user, *tail)`."""
        if len(namespace) < 2 or namespace[0] != self.prefix or not namespace[1]:
            raise UnsupportedNamespaceError(
                f"memstream's namespaces are ({self.prefix!r}, user_id, ...), not {namespace!r}")
        return namespace[1], tuple(namespace[2:])

    def name_of(self, user: str, doc: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
        """The namespace and key of a memory: those of the put that made it, else
        `(prefix, user)` and its id."""
        named = item_name(doc.get("thread_id"))
        if named is None:
            return (self.prefix, user), doc["id"]
        return (self.prefix, user, *named[0]), named[1]

    def _item(self, user: str, doc: dict[str, Any]) -> Item:
        namespace, key = self.name_of(user, doc)
        return Item(namespace=namespace, key=key, value=_value_of(doc), created_at=doc["created_at"],
                    updated_at=doc["updated_at"])

    def _search_item(self, user: str, doc: dict[str, Any], score: float | None) -> SearchItem:
        namespace, key = self.name_of(user, doc)
        return SearchItem(namespace, key, _value_of(doc), doc["created_at"], doc["updated_at"], score)

    # --- ops ------------------------------------------------------------------------------

    async def _get(self, op: GetOp) -> Item | None:
        user, tail = self.split(op.namespace)
        doc = await self._find(user, tail, op.key)
        if doc is None or doc["state"] not in LIVE_STATES or not await self._alive(user, doc):
            return None
        if self._refresh(op.refresh_ttl) and self._ttl(doc) is not None:
            await self._touch(user, [doc["id"]])
        item = self._item(user, doc)  # the key asked for, also when it followed a supersede
        return Item(namespace=op.namespace, key=op.key, value=item.value,
                    created_at=item.created_at, updated_at=item.updated_at)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        user, tail = self.split(op.namespace_prefix)
        if op.limit < 1 or op.offset < 0:
            raise ValueError("search needs limit >= 1 and offset >= 0")
        wanted = op.offset + op.limit
        if op.query:
            found = await self._aio.search(
                user, op.query, agent=self.agent, top_k=self._top_k(wanted, tail),
                filters=query_filters(op.filter), record_access=self._refresh(op.refresh_ttl, self.record_access),
                **({"budget_tokens": self.budget_tokens} if self.budget_tokens is not None else {}),
                **({"threshold": self.threshold} if self.threshold is not None else {}))
            docs = [(item.model_dump(mode="json"), item.score) for item in found]
        else:
            listed = await self._listed(user, state="active", wanted=None if tail else wanted,
                                        offset=0, **list_params(op.filter))
            docs = [(doc, None) for doc in listed]
        items: list[SearchItem] = []
        for doc, score in docs:
            if self.name_of(user, doc)[0][:len(op.namespace_prefix)] == op.namespace_prefix \
                    and await self._alive(user, doc):
                items.append(self._search_item(user, doc, score))
        page = items[op.offset:wanted]
        if not op.query and self._refresh(op.refresh_ttl, self.record_access):
            # memory.query records its reads; the registry's list does not: the store does
            await self._touch(user, [i.value["id"] for i in page if self._ttl(i.value) is not None])
        return page

    async def _put(self, op: PutOp) -> None:
        """Remember (or replace) the key's value, or delete it (a value of None); confirmed by
        reading the memory back through the store's key."""
        user, tail = self.split(op.namespace)
        thread = thread_for(tail, op.key)
        if op.value is None:
            await self._delete(user, tail, op.key)
            return
        ttl = self._ttl_minutes(op.ttl)
        text = text_of(op.value, op.index)
        turn_id = turn_of(op.namespace, op.key, op.value, op.index, ttl)
        doc = await self._find(user, tail, op.key)
        if doc is not None and f"{thread}:{turn_id}" in doc.get("source_turn_ids", ()):
            if doc["state"] == "soft_deleted":  # the value it was made from, put again
                await self._write(self._aio.restore(user, doc["id"]))
        elif doc is None or text != doc["summary"]:
            made = await self._remember(user, op.key, thread, text, turn_id)
            if doc is not None and doc["id"] != made["id"] and doc["state"] in LIVE_STATES:
                await self._write(self._aio.delete(user, doc["id"]))  # the key's value is replaced
            doc = made
        elif doc["state"] == "soft_deleted":  # the text get showed, put back after a delete
            await self._write(self._aio.restore(user, doc["id"]))
        pinned = op.value.get("pinned")
        if isinstance(pinned, bool) and pinned != doc.get("pinned", False):
            await self._write(self._aio.pin(user, doc["id"], pinned))
        await self._readable(user, op.key, doc["id"], "written")

    async def _delete(self, user: str, tail: tuple[str, ...], key: str) -> None:
        """Soft-delete the key's memory (restorable), confirmed by reading it back."""
        doc = await self._find(user, tail, key)
        if doc is None:
            hidden = self._remembered.get((user, thread_for(tail, key)))
            if hidden is not None and await self._aio.get(user, hidden) is None:
                raise OutOfScopeError(key, "held")
            return
        if doc["state"] not in LIVE_STATES:
            return
        if doc["state"] == "archived":  # the registry deletes active memories: bring it back first
            await self._write(self._aio.restore(user, doc["id"]))
        await self._write(self._aio.delete(user, doc["id"]))
        after = await self._aio.get(user, doc["id"])
        if after is None:
            raise OutOfScopeError(key, "deleted")
        if after.state in LIVE_STATES:
            raise WriteNotAppliedError(f"delete of key {key!r}: the memory is still {after.state}")

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        """The namespaces that hold items, among the users a prefix condition names, else the
        store's `users` and those it wrote to (no route lists a service's users)."""
        named = [c.path[1] for c in op.match_conditions or ()
                 if c.match_type == "prefix" and len(c.path) > 1 and c.path[0] == self.prefix
                 and c.path[1] != "*"]
        found: set[tuple[str, ...]] = set()
        for user in dict.fromkeys(named or [*self.users, *self._written]):
            try:
                docs = await self._listed(user, state="active")
            except PermissionDenied:
                continue  # not a user this key may read
            for doc in docs:
                namespace = self.name_of(user, doc)[0]
                if all(matches(c, namespace) for c in op.match_conditions or ()) \
                        and await self._alive(user, doc, sweep=False):
                    found.add(namespace[:op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset:op.offset + op.limit]

    # --- TTL --------------------------------------------------------------------------------

    def sweep_ttl(self, users: Sequence[str] = ()) -> int:
        """Delete the expired items of `users` (else the store's `users` and those it wrote
        to); how many."""
        return self.client._loop.run(self._sweep(users))

    def start_ttl_sweeper(self) -> None:
        """Sweep every TTLConfig `sweep_interval_minutes` in the client's loop (`stop_ttl_sweeper`)."""
        minutes = (self.ttl_config or {}).get("sweep_interval_minutes")
        if not minutes or self._sweeper is not None:
            return

        async def sweeping() -> None:
            while True:
                await asyncio.sleep(minutes * 60)
                with suppress(ApiError):
                    await self._sweep(())

        async def start() -> asyncio.Task[None]:
            return asyncio.create_task(sweeping(), name="memstream-store-ttl")

        self._sweeper = self.client._loop.run(start())

    def stop_ttl_sweeper(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None and not self.client._loop.loop.is_closed():
            self.client._loop.loop.call_soon_threadsafe(sweeper.cancel)

    async def _sweep(self, users: Sequence[str]) -> int:
        swept = 0
        for user in dict.fromkeys(users or [*self.users, *self._written]):
            for doc in await self._listed(user, state="active"):
                swept += not await self._alive(user, doc)
        return swept

    def _ttl_minutes(self, ttl: float | None | Any) -> float | None:
        if ttl is NOT_PROVIDED:
            return (self.ttl_config or {}).get("default_ttl")
        return ttl

    def _refresh(self, refresh_ttl: bool | None, default: bool | None = None) -> bool:
        if refresh_ttl is not None:
            return refresh_ttl
        if default is not None:
            return default
        return (self.ttl_config or {}).get("refresh_on_read", True)

    def _ttl(self, doc: Mapping[str, Any]) -> float | None:
        thread = doc.get("thread_id") or ""
        return ttl_of(list(doc.get("source_turn_ids", ())), thread) if item_name(thread) else None

    async def _alive(self, user: str, doc: Mapping[str, Any], sweep: bool = True) -> bool:
        """Whether the memory has not outlived its TTL; one that has is deleted (`sweep`)."""
        ends = expires_at(doc, self._ttl(doc))
        if ends is None or self.clock() < ends:
            return True
        if sweep and doc.get("state") in LIVE_STATES:
            with suppress(ApiError, WriteNotAppliedError):
                await self._write(self._aio.delete(user, doc["id"]))
        return False

    async def _touch(self, user: str, memory_ids: list[str]) -> None:
        """Record a read of the memories (their TTL starts again), as memory.query does."""
        if not memory_ids or not self._aio.broker:
            return
        command = touch(user, memory_ids, self.clock(), self.agent)
        producer = await self._aio._started_producer()
        await producer.send_and_wait(MEMORY_COMMANDS, key=user.encode(),
                                     value=command.model_dump_json().encode())

    # --- memories --------------------------------------------------------------------------

    async def _find(self, user: str, tail: tuple[str, ...], key: str) -> dict[str, Any] | None:
        """The memory `key` names in the namespace: the one a put of it became (the memory this
        store saw it become, else the newest made in the key's thread: any store finds it so),
        else the memory of that id (one said in chat: `(prefix, user)` only); followed to what
        superseded it. None when there is none the key may see."""
        thread = thread_for(tail, key)
        remembered = self._remembered.get((user, thread))
        if remembered is not None:
            doc = await self._current(user, await self._view(user, remembered))
            if doc is not None:
                return doc
        doc = await self._made_in(user, thread)
        if doc is None and not tail:
            doc = await self._current(user, await self._view(user, key))
            if doc is not None and item_name(doc.get("thread_id")) is not None:
                doc = None  # a store's memory is named by its key, not its id
            doc = doc or await self._made_in(user, legacy_thread_of(key))
        return doc

    async def _made_in(self, user: str, thread: str) -> dict[str, Any] | None:
        """The memory a put in `thread` became: the newest made there (a turn's first fact
        first), followed to what superseded it."""
        page = await self._aio.memories(user, thread_id=thread, limit=50)
        made = [m.model_dump(mode="json") for m in page.items if m.model_extra.get("thread_id") == thread]

        def first_fact(doc: Mapping[str, Any]) -> bool:
            return any(ref.startswith(thread + ":") for ref in doc.get("source_turn_ids", ())[:1])

        for doc in sorted(made, key=lambda d: not first_fact(d)):  # stable: newest first
            found = await self._current(user, doc)
            if found is not None:
                return found
        return None

    async def _current(self, user: str, doc: dict[str, Any] | None) -> dict[str, Any] | None:
        """`doc`, or the memory that superseded it (a bounded chain); None when that is purged,
        unseen or still superseded."""
        for _ in range(10):
            if doc is None or doc["state"] != "superseded" or not doc.get("superseded_by"):
                break
            doc = await self._view(user, doc["superseded_by"])
        if doc is not None and doc["state"] not in ("superseded", "purged"):
            return doc
        return None

    async def _view(self, user: str, memory_id: str) -> dict[str, Any] | None:
        view = await self._aio.get(user, memory_id)
        return view.model_dump(mode="json") if view is not None else None

    async def _listed(self, user: str, *, wanted: int | None = None, offset: int = 0,
                      **filters: Any) -> list[dict[str, Any]]:
        """The user's memories, newest first: `wanted` of them from `offset`, or every one."""
        docs: list[dict[str, Any]] = []
        next_offset: int | None = offset
        while next_offset is not None and (wanted is None or len(docs) < wanted):
            limit = PAGE if wanted is None else min(PAGE, wanted - len(docs))
            page = await self._aio.memories(user, limit=limit, offset=next_offset, **filters)
            docs += [m.model_dump(mode="json") for m in page.items]
            next_offset = page.next_offset
        return docs

    def _top_k(self, wanted: int, tail: tuple[str, ...]) -> int:
        """memory.query's top_k: what the page needs; below the user, the worker's most (the
        namespace is then a filter of memory.query's best)."""
        return max(wanted, 100) if tail else wanted

    async def _remember(self, user: str, key: str, thread: str, text: str,
                        turn_id: str) -> dict[str, Any]:
        """Say "Remember that <text>" as the user in the key's thread; the memory its first
        stored fact became, read back (`NotStoredError` when memstream kept nothing)."""
        if not self._aio.broker:
            raise StoreError("a put of a new value sends a chat turn to Kafka: give the store broker=")
        turn = Turn(user_id=user, thread_id=thread, turn_id=turn_id, role=Role.user,
                    text=f"Remember that {text}", ts=self.clock(), agent_id=self.agent)
        try:
            result = await self._aio.send_turn(turn, wait=True, timeout=self.timeout_s)
        except ApplyTimeout as exc:
            raise WriteNotAppliedError(f"the put of key {key!r} was not processed in time") from exc
        facts = [p for p in result.progress if p.stage != "ingest"]
        stored = [p for p in facts if p.outcome in STORED and p.memory_id]
        if not stored:
            raise NotStoredError(key, (facts or result.progress)[0].outcome if result.progress else "none")
        self._written[user] = None
        memory_id = stored[0].memory_id or ""
        self._remembered[(user, thread)] = memory_id
        return await self._readable(user, key, memory_id, stored[0].outcome)

    async def _readable(self, user: str, key: str, memory_id: str, outcome: str) -> dict[str, Any]:
        """The memory a put wrote, read back through the store's key."""
        doc = await self._view(user, memory_id) if memory_id else None
        if doc is None:
            raise OutOfScopeError(key, outcome)
        current = await self._current(user, doc)
        if current is None:
            raise NotStoredError(key, doc["state"])
        return current

    async def _write(self, call: Any) -> None:
        """A registry write, awaited until applied."""
        try:
            await call
        except (Rejected, ApplyTimeout) as exc:
            raise WriteNotAppliedError(str(exc)) from exc
        except ConfigurationError as exc:
            raise StoreError(str(exc)) from exc


def _value_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An item's value: the memory document but its score (the item's own); `id` stays, the
    memory's, for the client's calls."""
    return {k: v for k, v in doc.items() if k != "score"}


def _client_of(broker: str | None, api_url: str | None, api_key: str | None,
               timeout_s: float) -> MemstreamClient:
    """A client of these addresses with the process's Kafka security and connect timeout
    (KAFKA_SECURITY_PROTOCOL and the rest, KAFKA_CONNECT_TIMEOUT_SECONDS), as the tools have."""
    from streams.kafka.security import client_kwargs
    from streams.settings import get_settings

    kafka = get_settings().kafka
    return MemstreamClient(broker, api_url, api_key, timeout=timeout_s, apply_timeout=timeout_s,
                           kafka_security=client_kwargs(kafka),
                           connect_timeout=kafka.kafka_connect_timeout_seconds)
