"""`MemstreamStore`: a LangGraph `BaseStore` over memstream's HTTP API, for an agent.

A LangGraph agent adopts memstream by swapping its store: `search` answers through
`memory.query` (the agent's category allowlist, the ranking and the token budget are the
server's), `get` reads the registry, `put` and `delete` go through the registry's commands and
`chat.turns`, each waiting until memstream has applied it, so a read after a write sees it.
(`sinks/langgraph_store.py` is the other store: it reads the S3 Vectors index the sink writes.)

    store = MemstreamStore("http://worker:6066", api_key, agent="planner", broker="kafka:9092")
    store.put(("memories", "ana"), "goal", {"text": "I want to run a marathon in October."})
    store.search(("memories", "ana"), query="What is Ana training for?", limit=3)

What maps to what (docs/langgraph-store.md has the table):

- namespace `(prefix, user_id)`, `prefix` "memories" by default: the user is the second label.
  Every op names one user (memory.query and the registry are per user); `search` needs the
  whole `(prefix, user_id)`.
- an item is one memory: `key` its memory id, `value` the memory document (the registry's
  fields for `get`; memory.query's full item for `search`: the document with `text`, `tokens`,
  `rank_score`, `similarity`, `archived`, `related`), `created_at`/`updated_at` the document's,
  `score` (search) the item's calibrated score. Only active and archived memories are items.
- `search` with a query: `POST /v1/users/{user}/query` as the store's agent, `return: full`,
  `top_k = offset + limit`, the store's `budget_tokens` and `threshold`; filters become
  memory.query's server-side filters (`QUERY_FILTERS`). Without a query: the registry's list of
  active memories, newest first, `score` None, filters `category` and `pinned`. Any other filter
  is refused (`UnsupportedFilterError`), never applied by half.
- `put` of a key that names no memory: a chat turn "Remember that <text>" for the user (role
  user, `agent_id` the store's agent) on `chat.turns` (Kafka: `broker`), in a thread of its own
  (`thread_of(key)`), its turn id a digest of the namespace, key and value (`turn_of`: a changed
  value is a new turn, the same value put again the same turn, applied once), awaited on
  `memory.progress`. The memory it becomes has a memstream id (the id derived from that turn,
  or the memory it merged into): `get`/`put`/`delete` of the key find it (the newest memory
  made in the key's thread, or the one this store saw the put become); search results carry
  the memory id as their key. Text: the value's `summary`, `text`, `content` or `memory` (the
  first that is set), or the fields `index` names.
- `put` of a key that names a memory (its id, or a key put before): `PATCH` (edit the summary)
  when the text differs, pin/unpin when the value's `pinned` differs, restore first when it was
  deleted; each with `?wait=1`. Other value fields are memstream's to decide (category,
  importance, ...): they are not written.
- every put is read back through the store's key: a memory memstream stored in a category the
  key may not see raises `OutOfScopeError` (each time that value is put), never passes for a
  write the store could not make readable.
- `delete`: `DELETE /v1/users/{user}/memories/{id}?wait=1` (soft, restorable; an archived memory
  is restored first), confirmed by reading it back (`WriteNotAppliedError` while it is still
  live); no-op when absent; `OutOfScopeError` for a key whose memory this store put out of the
  key's sight.
- `list_namespaces`: memstream has no route that lists users (a user's data is only reachable
  under their id), so it answers among the `users` given to the store: those the key may read.

Allowlists are never widened: every read goes through the key's scope (the registry) or the
agent's allowlist (memory.query); an agent's own key may only query as that agent. With an admin
key, the registry shows every category: give an agent's store the agent's key.

Ops of a batch run in order, one after another, and the results come in op order; a read after
a write in the same batch sees it. `batch` runs `abatch` on an event loop of its own. TTL is not
supported. A namespace label may not contain "." (LangGraph's rule): such user ids cannot be named.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

import aiohttp
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path

from streams.errors import ApiError, MemstreamError
from streams.memory.ids import memory_id as derived_memory_id
from streams.privacy.placement import partition_for
from streams.tools.client import make_consumer, make_producer
from topics.names import CHAT_TURNS, MEMORY_PROGRESS
from topics.progress import TurnProgress, parse_progress
from topics.turns import Role, Turn

TEXT_FIELDS = ("summary", "text", "content", "memory")
"""Where `put` finds a value's text, the first that is set (unless `index` names fields)."""
LIVE_STATES = ("active", "archived")
"""The states of a memory that is an item; a soft-deleted one is restored by a put."""
STORED = ("created", "updated", "superseded", "duplicate")
"""Outcomes of a remembered fact that leave it in a memory (`topics.progress`)."""
EQUALITY_FILTERS = ("category", "pinned", "agent_id", "run_id", "actor_id", "role")
QUERY_FILTERS = (*EQUALITY_FILTERS, "importance", "updated_at")
"""Filters a search with a query takes: equality on EQUALITY_FILTERS; `importance` with $eq,
$gt, $gte, $lt, $lte; `updated_at` with $gte, $lte (ISO 8601 times or dates)."""
LIST_FILTERS = ("category", "pinned")
"""Filters a search without a query takes (the registry's list): equality."""
TURN_PREFIX = "put-"
"""A remembered put's turn id: this, then a digest of the namespace, key and value (`turn_of`)."""
THREAD_LISTING = 50
"""How many memories made in a key's thread `find` looks at (one per distinct value put)."""


class StoreError(MemstreamError):
    """Root of the errors of `MemstreamStore`."""


class StoreApiError(StoreError, ApiError):
    """The API answered an error (`status`, its message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class UnsupportedNamespaceError(StoreError, ValueError):
    """The namespace is not `(prefix, user_id)`."""


class UnsupportedFilterError(StoreError, ValueError):
    """The filter names a field or operator memstream cannot apply for this search."""


class MissingTextError(StoreError, ValueError):
    """A put's value has no text to remember."""


class NotStoredError(StoreError):
    """memstream kept nothing of a remembered put (`outcome`: skipped, blocked, dlq, ...)."""

    def __init__(self, key: str, outcome: str) -> None:
        super().__init__(f"memstream stored nothing for key {key!r} (outcome: {outcome})")
        self.outcome = outcome


class WriteNotAppliedError(StoreError):
    """A write was not applied in time (accepted, still pending) or was rejected, or a delete
    left the memory live."""


class OutOfScopeError(StoreError):
    """memstream stored the put (or holds the key's memory), but in a category the store's key
    may not see: the store cannot read it back, change or delete it. A put of a value that lands
    there raises this each time it is put (`outcome`: what memstream did with the remembered
    turn); a delete of a key whose memory this store put there raises it too. Give the store a
    key whose scope has the category, or put a value of the agent's categories."""

    def __init__(self, key: str, outcome: str) -> None:
        super().__init__(f"memstream stored the put of key {key!r} ({outcome}) in a category this "
                         f"API key may not see: it cannot be read, changed or deleted through it")
        self.outcome = outcome


def thread_of(key: str) -> str:
    """The chat thread of a remembered put of `key` (one per key, so the turns of a store never
    make an episode together)."""
    return "langgraph-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def turn_of(namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: Any = None) -> str:
    """The turn id of a remembered put: a digest of the namespace, the key and the value (and
    the fields `index` names). A changed value is a new turn, which memstream processes; the
    same value put again is the same turn, which memstream applies once (a replay)."""
    canonical = json.dumps([list(namespace), key, value, index], sort_keys=True, ensure_ascii=False,
                           separators=(",", ":"), default=str)
    return TURN_PREFIX + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


class MemstreamStore(BaseStore):
    """LangGraph's store over a memstream worker (see the module docstring)."""

    supports_ttl = False

    def __init__(self, api_url: str, api_key: str, agent: str, *, broker: str | None = None,
                 prefix: str = "memories", users: Sequence[str] = (),
                 budget_tokens: int | None = None, threshold: float | None = None,
                 record_access: bool = True, timeout_s: float = 30.0) -> None:
        """`api_url`: any worker; `api_key`: the key the agent reads and writes with; `agent`:
        the agent whose allowlist memory.query applies; `broker`: Kafka's bootstrap servers, for
        a put of a new key (a remembered turn); `users`: the candidates `list_namespaces` may
        answer; `record_access`: whether a search refreshes the access time and count of
        what it returns (memory.query's; False for inspection reads); `timeout_s`: how long one request, or one put awaiting its turn, may take."""
        self.api_url = api_url.rstrip("/")
        self.agent = agent
        self.broker = broker
        self.prefix = prefix
        self.users = tuple(users)
        self.budget_tokens = budget_tokens
        self.threshold = threshold
        self.record_access = record_access
        self.timeout_s = timeout_s
        self._api_key = api_key
        self._remembered: dict[tuple[str, str], str] = {}
        """(user, key) -> the memory a remembered put of that key became here."""

    # --- the one entry point -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.abatch(ops))
        with ThreadPoolExecutor(1) as pool:  # called from a coroutine: a loop on another thread
            return pool.submit(asyncio.run, self.abatch(ops)).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        async with _Calls(self) as calls:
            results: list[Result] = []
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(await calls.get(op))
                elif isinstance(op, SearchOp):
                    results.append(await calls.search(op))
                elif isinstance(op, PutOp):
                    results.append(await calls.put(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(await calls.list_namespaces(op))
                else:
                    raise TypeError(f"unknown op {type(op).__name__}")
            return results

    # --- mapping ----------------------------------------------------------------------------

    def user_of(self, namespace: tuple[str, ...]) -> str:
        if len(namespace) != 2 or namespace[0] != self.prefix:
            raise UnsupportedNamespaceError(
                f"memstream's namespaces are ({self.prefix!r}, user_id), not {namespace!r}")
        return namespace[1]

    def item_of(self, user: str, doc: Mapping[str, Any]) -> Item:
        return Item(namespace=(self.prefix, user), key=doc["id"], value=_value_of(doc),
                    created_at=doc["created_at"], updated_at=doc["updated_at"])

    def search_item_of(self, user: str, doc: Mapping[str, Any], score: float | None) -> SearchItem:
        return SearchItem((self.prefix, user), doc["id"], _value_of(doc), doc["created_at"],
                          doc["updated_at"], score)


class _Calls:
    """One batch's HTTP session (and Kafka producer, once a put needs one)."""

    def __init__(self, store: MemstreamStore) -> None:
        self.store = store
        self.http = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {store._api_key}"},
            timeout=aiohttp.ClientTimeout(total=store.timeout_s))
        self.producer: AIOKafkaProducer | None = None

    async def __aenter__(self) -> _Calls:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.close()
        if self.producer is not None:
            await self.producer.stop()

    # --- ops -----------------------------------------------------------------------------------

    async def get(self, op: GetOp) -> Item | None:
        user = self.store.user_of(op.namespace)
        doc = await self.find(user, op.key)
        return self.store.item_of(user, doc) if doc and doc["state"] in LIVE_STATES else None

    async def search(self, op: SearchOp) -> list[SearchItem]:
        user = self.store.user_of(op.namespace_prefix)
        if op.limit < 1 or op.offset < 0:
            raise ValueError("search needs limit >= 1 and offset >= 0")
        if op.query:
            return await self.query(user, op)
        params = {"state": "active", "limit": str(op.limit), "offset": str(op.offset),
                  **list_params(op.filter)}
        body = await self.call("GET", user, "/memories", params=params)
        return [self.store.search_item_of(user, doc, None) for doc in body["items"]]

    async def query(self, user: str, op: SearchOp) -> list[SearchItem]:
        store = self.store
        request: dict[str, Any] = {"agent": store.agent, "query": op.query, "return": "full",
                                   "top_k": op.offset + op.limit, "filters": query_filters(op.filter),
                                   "record_access": store.record_access}
        if store.budget_tokens is not None:
            request["budget_tokens"] = store.budget_tokens
        if store.threshold is not None:
            request["threshold"] = store.threshold
        body = await self.call("POST", user, "/query", json=request)
        items = body["items"][op.offset:op.offset + op.limit]
        return [store.search_item_of(user, item, item.get("score")) for item in items]

    async def put(self, op: PutOp) -> None:
        """Remember, edit, pin or delete (a value of None); each write is confirmed by reading
        the memory back through the store's key: a memory it cannot see raises
        `OutOfScopeError`, never passes for a write made."""
        user = self.store.user_of(op.namespace)
        if op.value is None:
            await self.delete(user, op.key)
            return
        text = text_of(op.value, op.index)
        doc = await self.find(user, op.key)
        wrote = False
        if doc is None:
            turn_id = turn_of((self.store.prefix, user), op.key, op.value, op.index)
            outcome = await self.remember(user, op.key, text, turn_id)
            doc = await self.readable(user, op.key, outcome.memory_id or "", outcome.outcome)
        else:
            memory = f"/memories/{_segment(doc['id'])}"
            if doc["state"] == "soft_deleted":
                await self.write("POST", user, memory + "/restore")
                wrote = True
            if text != doc["summary"]:
                await self.write("PATCH", user, memory, {"text": text})
                wrote = True
        pinned = op.value.get("pinned")
        if isinstance(pinned, bool) and pinned != doc.get("pinned", False):
            await self.write("POST", user, f"/memories/{_segment(doc['id'])}/{'pin' if pinned else 'unpin'}")
            wrote = True
        if wrote:
            await self.readable(user, op.key, doc["id"], "edited")

    async def readable(self, user: str, key: str, memory_id: str, outcome: str) -> dict[str, Any]:
        """The memory a put wrote, read back through the store's key; `OutOfScopeError` when the
        key may not see it, `NotStoredError` when nothing of it is left (purged)."""
        doc = await self.memory(user, memory_id) if memory_id else None
        if doc is None:
            raise OutOfScopeError(key, outcome)
        current = await self.current(user, doc)
        if current is None:
            raise NotStoredError(key, doc["state"])
        return current

    async def delete(self, user: str, key: str) -> None:
        """Soft-delete the key's memory (restorable), confirmed: it has left the live states
        once this returns. Nothing when the key names no memory; `OutOfScopeError` when it names
        one this store put where its key may not see it."""
        doc = await self.find(user, key)
        if doc is None:
            hidden = self.store._remembered.get((user, key))
            if hidden is not None and await self.memory(user, hidden) is None:
                raise OutOfScopeError(key, "held")
            return
        if doc["state"] not in LIVE_STATES:
            return  # deleted already
        memory = f"/memories/{_segment(doc['id'])}"
        if doc["state"] == "archived":  # the registry deletes active memories: bring it back first
            await self.write("POST", user, memory + "/restore")
        await self.write("DELETE", user, memory)
        after = await self.memory(user, doc["id"])
        if after is None:
            raise OutOfScopeError(key, "deleted")
        if after["state"] in LIVE_STATES:
            raise WriteNotAppliedError(f"delete of key {key!r}: the memory is still {after['state']}")

    async def list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for user in dict.fromkeys(self.store.users):
            namespace = (self.store.prefix, user)
            if not all(_matches(c, namespace) for c in op.match_conditions or ()):
                continue
            status, body = await self.request("GET", _user_path(user) + "/memories",
                                              params={"limit": "0"})
            if status == 200:
                found.add(namespace[:op.max_depth] if op.max_depth is not None else namespace)
            elif status not in (400, 403):  # 403: not a user this key may read
                raise StoreApiError(status, _message(body))
        return sorted(found)[op.offset:op.offset + op.limit]

    # --- memories --------------------------------------------------------------------------

    async def find(self, user: str, key: str) -> dict[str, Any] | None:
        """The memory `key` names: the memory of that id, or the one a put of `key` became
        (following a supersede to the memory that replaced it); None when there is none, or the
        key may not see it (a purged memory is none).

        The one a put became is the memory this store saw it become (`_remembered`), else the
        newest memory made in the key's thread that the key sees (`made_in`): any store finds it
        so, not knowing the value that was put (the turn id is the value's)."""
        store = self.store
        for memory_id in dict.fromkeys(c for c in (key, store._remembered.get((user, key))) if c):
            doc = await self.current(user, await self.memory(user, memory_id))
            if doc is not None:
                return doc
        return await self.made_in(user, thread_of(key))

    async def current(self, user: str, doc: dict[str, Any] | None) -> dict[str, Any] | None:
        """`doc`, or the memory that superseded it (a chain, bounded); None when that is purged,
        unseen or still superseded."""
        for _ in range(10):
            if doc is None or doc["state"] != "superseded" or not doc.get("superseded_by"):
                break
            doc = await self.memory(user, doc["superseded_by"])
        if doc is not None and doc["state"] not in ("superseded", "purged"):
            return doc
        return None

    async def made_in(self, user: str, thread: str) -> dict[str, Any] | None:
        """The memory a put in `thread` (a key's) became, as the registry shows it to the key:
        of the memories made in the thread, newest first, the first that is a turn's first fact
        (its id derived from the thread and that turn), else the first; followed to what
        superseded it."""
        body = await self.call("GET", user, "/memories",
                               params={"thread_id": thread, "limit": str(THREAD_LISTING)})
        made = [d for d in body["items"] if d.get("thread_id") == thread]

        def first_fact(doc: Mapping[str, Any]) -> bool:
            turns = (ref[len(thread) + 1:] for ref in doc.get("source_turn_ids", [])
                     if ref.startswith(thread + ":"))
            return any(doc["id"] == derived_memory_id(user, thread, turn, 0) for turn in turns)

        for doc in sorted(made, key=lambda d: not first_fact(d)):  # stable: newest first
            found = await self.current(user, doc)
            if found is not None:
                return found
        return None

    async def memory(self, user: str, memory_id: str) -> dict[str, Any] | None:
        status, body = await self.request("GET", f"{_user_path(user)}/memories/{_segment(memory_id)}")
        if status == 404:
            return None
        if status != 200:
            raise StoreApiError(status, _message(body))
        return body

    async def remember(self, user: str, key: str, text: str, turn_id: str) -> TurnProgress:
        """Say "Remember that <text>" as the user in the key's thread, as turn `turn_id`; what
        became of its first fact once memstream has stored it (`NotStoredError` when memstream
        kept nothing of it)."""
        store = self.store
        if not store.broker:
            raise StoreError("a put of a new key sends a chat turn to Kafka: give the store broker=")
        turn = Turn(user_id=user, thread_id=thread_of(key), turn_id=turn_id, role=Role.user,
                    text=f"Remember that {text}", ts=datetime.now(timezone.utc), agent_id=store.agent)
        if self.producer is None:
            self.producer = make_producer(store.broker)  # acks=all, no linger; checks the connection
            await self.producer.start()
        progress = make_consumer(store.broker, enable_auto_commit=False)
        await progress.start()
        try:
            # Read the user's partition of memory.progress from its end now, before the turn
            # is sent, so its records cannot be missed.
            partitions = progress.partitions_for_topic(MEMORY_PROGRESS) or await _partitions(progress)
            where = TopicPartition(MEMORY_PROGRESS, partition_for(user, len(partitions)))
            progress.assign([where])
            progress.seek(where, (await progress.end_offsets([where]))[where])
            await self.producer.send_and_wait(CHAT_TURNS, key=user.encode(),
                                              value=turn.model_dump_json().encode())
            outcome = await _first_fact(progress, turn, time.monotonic() + store.timeout_s)
        finally:
            await progress.stop()
        if outcome.outcome not in STORED or outcome.memory_id is None:
            raise NotStoredError(key, outcome.outcome)
        store._remembered[(user, key)] = outcome.memory_id
        return outcome

    # --- HTTP ------------------------------------------------------------------------------

    async def call(self, method: str, user: str, path: str, **kwargs: Any) -> Any:
        """A read of the user's; its body, or StoreApiError."""
        status, body = await self.request(method, _user_path(user) + path, **kwargs)
        if status != 200:
            raise StoreApiError(status, _message(body))
        return body

    async def write(self, method: str, user: str, path: str, body: Any = None) -> None:
        """A registry write, answered once applied (`?wait=1`)."""
        status, answer = await self.request(method, _user_path(user) + path, json=body,
                                          params={"wait": "1"},
                                          headers={"Idempotency-Key": uuid.uuid4().hex})
        if status == 200:
            return
        if status == 202:
            raise WriteNotAppliedError(f"{method} {path}: accepted, not applied within the wait")
        if status == 422:
            reasons = [c.get("reason") or "" for c in answer.get("commands", [])]
            raise WriteNotAppliedError(f"{method} {path}: rejected ({'; '.join(filter(None, reasons))})")
        raise StoreApiError(status, _message(answer))

    async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        """(status, JSON body), asked again while the worker answers 503 (tables recovering, a
        partition moving), after its Retry-After, within the store's timeout."""
        deadline = time.monotonic() + self.store.timeout_s
        while True:
            async with self.http.request(method, self.store.api_url + path, **kwargs) as response:
                text = await response.text()
                try:
                    body = json.loads(text)
                except ValueError:
                    body = text
                if response.status != 503 or time.monotonic() >= deadline:
                    return response.status, body
                pause = float(response.headers.get("Retry-After", "1"))
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))


# --- mapping helpers ------------------------------------------------------------------------

def _value_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An item's value: the memory document's fields but its id and score (the item's own)."""
    return {k: v for k, v in doc.items() if k not in ("id", "score")}


def text_of(value: Mapping[str, Any], index: Any) -> str:
    """The text a put remembers: at the fields `index` names, else the first of TEXT_FIELDS."""
    if isinstance(index, list):
        texts = [t.strip() for f in index for t in get_text_at_path(value, f) if t.strip()]
    else:
        texts = [value[f].strip() for f in TEXT_FIELDS
                 if isinstance(value.get(f), str) and value[f].strip()][:1]
    if not texts:
        where = index if isinstance(index, list) else list(TEXT_FIELDS)
        raise MissingTextError(f"no text to remember at {where}")
    return " ".join(texts)


def query_filters(filter: Mapping[str, Any] | None) -> dict[str, Any]:
    """A LangGraph filter as memory.query's `filters` (QUERY_FILTERS), or UnsupportedFilterError."""
    out: dict[str, Any] = {}
    for name, condition in (filter or {}).items():
        for op, value in _conditions(condition):
            if name in EQUALITY_FILTERS and op == "$eq":
                out[name] = value
            elif name == "importance" and op in ("$eq", "$gte", "$gt") and isinstance(value, int):
                out["importance_min"] = value + (op == "$gt")
                if op == "$eq":
                    out["importance_max"] = value
            elif name == "importance" and op in ("$lte", "$lt") and isinstance(value, int):
                out["importance_max"] = value - (op == "$lt")
            elif name == "updated_at" and op in ("$gte", "$lte"):
                out["updated_after" if op == "$gte" else "updated_before"] = value
            else:
                raise UnsupportedFilterError(
                    f"memory.query cannot filter {name!r} with {op}; it takes {', '.join(QUERY_FILTERS)}")
    return out


def list_params(filter: Mapping[str, Any] | None) -> dict[str, str]:
    """A LangGraph filter as the registry list's parameters (LIST_FILTERS)."""
    out: dict[str, str] = {}
    for name, condition in (filter or {}).items():
        for op, value in _conditions(condition):
            if name == "category" and op == "$eq" and isinstance(value, str):
                out["category"] = value
            elif name == "pinned" and op == "$eq" and isinstance(value, bool):
                out["pinned"] = "true" if value else "false"
            else:
                raise UnsupportedFilterError(
                    f"a search without a query filters on {', '.join(LIST_FILTERS)} only "
                    f"(equality); give a query to filter {name!r}")
    return out


def _conditions(condition: Any) -> list[tuple[str, Any]]:
    """`{"$op": value, ...}`, or a bare value for $eq."""
    if isinstance(condition, Mapping):
        return list(condition.items())
    return [("$eq", condition)]


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's prefix/suffix match, with "*" matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == label for p, label in zip(path, labels))


def _segment(text: str) -> str:
    return quote(text, safe="")


def _user_path(user: str) -> str:
    return f"/v1/users/{_segment(user)}"


def _message(body: Any) -> str:
    return str(body.get("error", body)) if isinstance(body, dict) else str(body)


async def _partitions(consumer: AIOKafkaConsumer) -> set[int]:
    await consumer.topics()  # fetches the cluster's metadata
    partitions = consumer.partitions_for_topic(MEMORY_PROGRESS)
    if not partitions:
        raise StoreError(f"topic {MEMORY_PROGRESS} not found on the broker")
    return partitions


async def _first_fact(consumer: AIOKafkaConsumer, turn: Turn, deadline: float) -> TurnProgress:
    """What became of the turn's first fact (or of the turn, when it gave none)."""
    wanted = (turn.user_id, turn.thread_id, turn.turn_id)
    while (left := deadline - time.monotonic()) > 0:
        batch = await consumer.getmany(timeout_ms=max(1, int(min(left, 1.0) * 1000)))
        for records in batch.values():
            for progress in (p for record in records for p in parse_progress(record.value)):
                if (progress.user_id, progress.thread_id, progress.turn_id) != wanted:
                    continue
                if progress.fact_count == 0 or (progress.stage != "ingest" and progress.fact_index == 0):
                    return progress
    raise WriteNotAppliedError(f"the remembered turn {turn.thread_id}:{turn.turn_id} was not "
                               f"processed in time")
