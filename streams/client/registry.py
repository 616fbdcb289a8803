"""The registry half of `AsyncMemstreamClient`: read, list, search, change and remove a user's
memories over the HTTP API (`streams.api.registry`, `memory.query`), typed with the API's own
models (`streams.api.registry_models`, `topics.query`).

Writes go through the registry's commands: each is sent with an `Idempotency-Key` (one made per
call unless given), so the client's retry of a 503 applies it once, and with `wait` (the
default) it returns once the worker has applied it (`WriteResult.status == "applied"`), raises
`Rejected` (422) when the worker refused it, and `ApplyTimeout` when it was accepted but not
applied within the worker's wait (COMMAND_WAIT_MAX_SECONDS, 10 s by default).
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from streams.api.registry_models import AuditEntry, Export, History, MemoryView, WriteResult
from streams.client.errors import ApiError, ApplyTimeout, NotFound
from streams.client.models import MemoryPage, QueryResult
from topics.query import FullItem

LIST_PAGE = 100
"""Memories per `list` page unless asked (the API's own default is 1,000, its most 5,000)."""
FORGET_TOP_K = 1
"""How many of the memories a `forget(query=...)` matches it deletes unless told: the best
one, as a user saying "forget that" means one thing."""


class _Requests(Protocol):
    async def _request(self, method: str, path: str, **kwargs: Any) -> Any: ...

    async def query(self, user_id: str, query: str, *, agent: str = ..., top_k: int | None = ...,
                    mode: Any = ..., **fields: Any) -> QueryResult: ...


def user_path(user_id: str) -> str:
    return f"/v1/users/{quote(user_id, safe='')}"


def memory_path(user_id: str, memory_id: str) -> str:
    return f"{user_path(user_id)}/memories/{quote(memory_id, safe='')}"


def _parsed(model: type[BaseModel], answer: Any, what: str) -> Any:
    try:
        return model.model_validate(answer)
    except ValidationError as exc:
        raise ApiError(200, f"the answer is not {what}: {exc}") from exc


class RegistryCalls:
    """The registry's calls (module doc); mixed into `AsyncMemstreamClient`."""

    # --- reads -------------------------------------------------------------------------------

    async def get(self: _Requests, user_id: str, memory_id: str) -> MemoryView | None:
        """One memory of the user (GET .../memories/{id}); None when there is none the key may
        see (mem0's `get`)."""
        try:
            answer = await self._request("GET", memory_path(user_id, memory_id))
        except NotFound:
            return None
        return _parsed(MemoryView, answer, "a memory")

    async def memories(self: _Requests, user_id: str, *, category: str | Sequence[str] | None = None,
                       state: str | None = None, pinned: bool | None = None,
                       text: str | None = None, thread_id: str | None = None,
                       limit: int = LIST_PAGE, offset: int = 0) -> MemoryPage:
        """One page of the user's memories, newest first (GET .../memories; mem0's `get_all`):
        only `category` (one or several), `state` (active, soft_deleted, archived, superseded;
        any but purged when None), `pinned`, those whose summary, tags or entities hold `text`,
        those made in `thread_id`. `next_offset` asks for the next page. (`list` is this.)"""
        params: list[tuple[str, str]] = [("limit", str(limit)), ("offset", str(offset))]
        categories = [category] if isinstance(category, str) else list(category or [])
        params += [("category", c) for c in categories]
        for name, value in (("state", state), ("q", text), ("thread_id", thread_id)):
            if value is not None:
                params.append((name, value))
        if pinned is not None:
            params.append(("pinned", "true" if pinned else "false"))
        answer = await self._request("GET", f"{user_path(user_id)}/memories", params=params)
        if isinstance(answer, dict):
            answer = {**answer, "offset": offset}
        return _parsed(MemoryPage, answer, "a list of memories")

    async def search(self: _Requests, user_id: str, query: str, *, agent: str = "supervisor",
                     top_k: int | None = None, threshold: float | None = None,
                     **fields: Any) -> list[FullItem]:
        """The user's memories that answer `query`, best first, as documents with their `score`
        (memory.query with `return: full`, as `agent`; mem0's `search`). `threshold` drops the
        items scoring lower; `fields` are memory.query's others (filters, categories,
        explain, include_archived, record_access, …)."""
        if threshold is not None:
            fields["threshold"] = threshold
        answer = await self.query(user_id, query, agent=agent, top_k=top_k, mode="full", **fields)
        return [item for item in answer.items if isinstance(item, FullItem)]

    async def history(self: _Requests, user_id: str, memory_id: str) -> list[AuditEntry]:
        """The memory's audit trail, oldest first: every change with its actor, time, old and
        new value (mem0's `history`)."""
        answer = await self._request("GET", memory_path(user_id, memory_id) + "/history")
        return list(_parsed(History, answer, "a memory's history").history)

    async def export(self: _Requests, user_id: str) -> Export:
        """Everything memstream keeps about the user that the key may see: memories with their
        history, blocked topics, pending consent proposals."""
        return _parsed(Export, await self._request("GET", f"{user_path(user_id)}/export"), "an export")

    # --- writes ------------------------------------------------------------------------------

    async def update(self, user_id: str, memory_id: str, text: str, *, wait: bool = True,
                     idempotency_key: str | None = None) -> WriteResult:
        """Replace the memory's summary with `text` (1-2 self-contained sentences, through the
        write policy like anything said; mem0's `update`)."""
        return await self._write("PATCH", memory_path(user_id, memory_id), {"text": text},
                                 wait=wait, idempotency_key=idempotency_key)

    async def delete(self, user_id: str, memory_id: str, *, wait: bool = True,
                     idempotency_key: str | None = None) -> WriteResult:
        """Soft-delete the memory: no longer served, restorable (`restore`) until purged
        (mem0's `delete`)."""
        return await self._write("DELETE", memory_path(user_id, memory_id), wait=wait,
                                 idempotency_key=idempotency_key)

    async def restore(self, user_id: str, memory_id: str, *, wait: bool = True,
                      idempotency_key: str | None = None) -> WriteResult:
        """Bring back a soft-deleted or archived memory."""
        return await self._write("POST", memory_path(user_id, memory_id) + "/restore", wait=wait,
                                 idempotency_key=idempotency_key)

    async def pin(self, user_id: str, memory_id: str, pinned: bool = True, *, wait: bool = True,
                  idempotency_key: str | None = None) -> WriteResult:
        """Pin the memory (ranked higher, never forgotten by the TTL), or unpin it."""
        action = "pin" if pinned else "unpin"
        return await self._write("POST", f"{memory_path(user_id, memory_id)}/{action}", wait=wait,
                                 idempotency_key=idempotency_key)

    async def forget(self, user_id: str, query: str | None = None, *, agent: str = "supervisor",
                     top_k: int = FORGET_TOP_K, threshold: float | None = None,
                     wait: bool = True) -> WriteResult:
        """Soft-delete what `query` describes: the best `top_k` memories of a memory.query for it
        (as `agent`, at `threshold`, else the worker's QUERY_THRESHOLD), as a user's "forget
        that …" does. Without `query`, every active memory of the user (mem0's `delete_all`):
        restorable, unlike `purge_user`. The answer lists one command per memory deleted."""
        if query is None:
            return await self._write("DELETE", f"{user_path(user_id)}/memories", wait=wait)
        fields: dict[str, Any] = {"record_access": False}
        if threshold is not None:
            fields["threshold"] = threshold
        found = await self.query(user_id, query, agent=agent, top_k=top_k, **fields)
        results = [await self.delete(user_id, item.id, wait=wait) for item in found.items]
        commands = [command for result in results for command in result.commands]
        statuses = {result.status for result in results} or {"applied"}
        status = "rejected" if "rejected" in statuses else "accepted" if "accepted" in statuses else "applied"
        return WriteResult(status=status, commands=commands)

    async def purge_user(self, user_id: str, *, wait: bool = True,
                         idempotency_key: str | None = None) -> WriteResult:
        """Remove everything of the user for good (an admin key only): memories, logs, records,
        the user's data key; the audit keeps a content-free tombstone per memory."""
        return await self._write("DELETE", user_path(user_id), wait=wait,
                                 idempotency_key=idempotency_key)

    async def _write(self: Any, method: str, path: str, body: Any = None, *, wait: bool,
                     idempotency_key: str | None = None) -> WriteResult:
        headers = {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}
        params = {"wait": "1"} if wait else {}
        answer = await self._request(method, path, json=body, params=params, headers=headers)
        result: WriteResult = _parsed(WriteResult, answer, "a registry write's answer")
        if wait and result.status == "accepted":
            raise ApplyTimeout([], 0, f"{method} {path}: accepted, not applied within the "
                               "worker's wait (COMMAND_WAIT_MAX_SECONDS); it applies later")
        return result

    # mem0's name for the list of a user's memories; defined last, so `list` in the
    # annotations above stays the builtin
    list = memories
