"""The registry API: what memstream knows about a user, and the user's (or an admin's) changes.

Reads answer from the tables of the worker that owns the user (`streams.api.routing.route_to_owner`). Writes never
touch a table: they send commands to `memory.commands` and answer 202 with the command ids;
`?wait=1` (or `?wait=<seconds>`) answers once the commands stage has applied them (200), or
dead-lettered one (422), or the wait ran out (202). `GET .../commands/{id}` tells the outcome
later. An `Idempotency-Key` header names the commands, so a retried write applies once.

Access: a key acts only for its users (streams/auth.py); an agent key sees and changes only the
categories of its allowlist, and anything outside it is answered as if it did not exist (404).
"""
from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timezone
from typing import Any, Iterable

from aiohttp import web
from faust.web import Request, Response, View
from pydantic import BaseModel, ValidationError

from agents.dedup import index_cache, state
from streams.api import auth
from streams.app.factory import app, applied_table, settings, tables_ready, users_table
from streams.api.command_waiter import CommandWaiter, Outcome, applied_key, outcome_of_applied
from streams.memory.model import Memory
from streams.pipeline.outputs import send_command
from streams.api.registry_models import EditBody, MemoryView, TopicBody
from streams.api.routing import route_to_owner
from topics.commands import Command

waiter = CommandWaiter(applied_table.name)
app.sensors.add(waiter)

USER = "/v1/users/{user_id}"
LIST_LIMIT_MAX = 5000


class BadRequest(ValueError):
    """A malformed request; answered 400 with the message."""


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _scope(request: Request) -> frozenset[str] | None:
    return auth.category_scope(auth.principal_of(request), settings.categories_path)


def _in_scope(memory: Memory, scope: frozenset[str] | None) -> bool:
    return scope is None or memory.category.casefold() in scope


def _user_memories(user_id: str) -> list[Memory]:
    return list(index_cache.ensure().user(user_id).docs.values())


def _find(user_id: str, memory_id: str, scope: frozenset[str] | None) -> Memory | None:
    """The user's memory, if it exists, is the user's, and the caller may see it."""
    memory = state().memory(memory_id)
    if memory is None or memory.user_id != user_id or not _in_scope(memory, scope):
        return None
    return memory


def _body(model: type[BaseModel], raw: bytes) -> Any:
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise BadRequest(f"invalid body: {problems}") from None


def _wait_seconds(request: Request) -> float:
    raw = request.query.get("wait")
    if raw in (None, "", "0", "false"):
        return 0.0
    if raw in ("1", "true"):
        return settings.command_wait_max_seconds
    try:
        seconds = float(raw)
    except ValueError:
        raise BadRequest("wait must be 1, true or a number of seconds") from None
    if not 0 <= seconds <= settings.command_wait_max_seconds:
        raise BadRequest(f"wait must be between 0 and {settings.command_wait_max_seconds} seconds")
    return seconds


def _matches(memory: Memory, categories: set[str], state_: str | None, pinned: str | None,
             text: str) -> bool:
    if categories and memory.category.casefold() not in categories:
        return False
    if state_ and memory.state != state_:
        return False
    if pinned in ("true", "false") and memory.pinned != (pinned == "true"):
        return False
    haystack = " ".join([memory.summary, *memory.tags, *memory.entities]).casefold()
    return not text or text in haystack


def _int(request: Request, name: str, default: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) > high:
        raise BadRequest(f"{name} must be an integer between 0 and {high}")
    return int(raw)


# --- command sending ------------------------------------------------------------------------
def _status_url(user_id: str, command_id: str) -> str:
    return f"/v1/users/{user_id}/commands/{command_id}"


def _outcome_json(command: Command, outcome: Outcome | None) -> dict[str, Any]:
    body = {"command_id": command.command_id, "kind": command.kind,
            "status_url": _status_url(command.user_id, command.command_id)}
    return {**body, **(outcome.as_json() if outcome else {"status": "accepted", "events": []})}


async def send_commands(request: Request, user_id: str,
                        specs: Iterable[tuple[str, dict[str, Any]]]) -> web.Response:
    """Send one command per (kind, fields); answer as the module docstring says."""
    wait = _wait_seconds(request)
    principal = auth.principal_of(request)
    base_id = request.headers.get("Idempotency-Key") or uuid.uuid4().hex
    now = datetime.now(timezone.utc)
    commands = []
    for i, (kind, fields) in enumerate(specs):
        command_id = base_id if i == 0 else f"{base_id}:{i}"
        commands.append(Command(command_id=command_id[:200], kind=kind, user_id=user_id, ts=now,  # type: ignore[arg-type]
                                actor=principal.actor[:200], **fields))
    outcomes: dict[str, Outcome | None] = {}
    futures: dict[str, asyncio.Future[Outcome]] = {}
    for command in commands:
        outcomes[command.command_id] = outcome_of_applied(
            applied_table.get(applied_key(user_id, command.command_id)))
        if wait and outcomes[command.command_id] is None:
            futures[command.command_id] = waiter.expect(user_id, command.command_id)
    try:
        for command in commands:
            if outcomes[command.command_id] is None:
                await send_command(command)
        if futures:
            await asyncio.wait(futures.values(), timeout=wait)
        for command_id, future in futures.items():
            outcomes[command_id] = future.result() if future.done() else None
    finally:
        for command_id, future in futures.items():
            waiter.forget(user_id, command_id, future)
    statuses = {o.status if o else "accepted" for o in outcomes.values()}
    status = "rejected" if "rejected" in statuses else "accepted" if "accepted" in statuses else "applied"
    if not commands:
        status = "applied"
    code = {"applied": 200, "rejected": 422, "accepted": 202}[status]
    headers = {"Location": _status_url(user_id, commands[0].command_id)} if commands else {}
    return web.json_response(
        {"status": status, "commands": [_outcome_json(c, outcomes[c.command_id]) for c in commands]},
        status=code, headers=headers)


class RegistryView(View):
    """Turns the registry's named errors into their HTTP answers."""

    async def dispatch(self, request: Any) -> Any:
        try:
            return await super().dispatch(request)
        except BadRequest as exc:
            return _error(400, str(exc))


def _not_ready() -> web.Response | None:
    return None if tables_ready() else web.json_response(
        {"error": "recovering, retry shortly"}, status=503, headers={"Retry-After": "1"})


# --- routes -----------------------------------------------------------------------------------
@app.page(USER + "/memories")
class UserMemories(RegistryView):
    """GET: the user's memories, newest first, filtered (`category` (repeatable or comma list),
    `state`, `pinned`, `q` substring), with provenance and timestamps. DELETE: delete them all
    (soft delete, restorable)."""

    @route_to_owner(app, users_table, "user_id")
    async def get(self, request: Request, user_id: str) -> Response:
        if (busy := _not_ready()) is not None:
            return busy
        scope = _scope(request)
        categories = {c.strip().casefold() for raw in request.query.getall("category", [])
                      for c in raw.split(",") if c.strip()}
        limit = _int(request, "limit", 1000, LIST_LIMIT_MAX)
        offset = _int(request, "offset", 0, 10**9)
        text = request.query.get("q", "").strip().casefold()
        found = [m for m in _user_memories(user_id) if _in_scope(m, scope) and _matches(
            m, categories, request.query.get("state"), request.query.get("pinned"), text)]
        found.sort(key=lambda m: m.created_at, reverse=True)
        return self.json({"user_id": user_id, "total": len(found),
                          "items": [MemoryView.of(m) for m in found[offset:offset + limit]]})

    @route_to_owner(app, users_table, "user_id")
    async def delete(self, request: Request, user_id: str) -> Response:
        if (busy := _not_ready()) is not None:
            return busy
        scope = _scope(request)
        targets = sorted((m for m in _user_memories(user_id)
                          if m.state == "active" and _in_scope(m, scope)), key=lambda m: m.id)
        return await send_commands(request, user_id, [("delete", {"memory_id": m.id}) for m in targets])


@app.page(USER + "/memories/{memory_id}")
class UserMemory(RegistryView):
    """GET one memory; PATCH {text} edits its summary; DELETE soft-deletes it."""

    @route_to_owner(app, users_table, "user_id")
    async def get(self, request: Request, user_id: str, memory_id: str) -> Response:
        memory = _find(user_id, memory_id, _scope(request))
        return self.json(MemoryView.of(memory)) if memory else _error(404, "no such memory")

    @route_to_owner(app, users_table, "user_id")
    async def patch(self, request: Request, user_id: str, memory_id: str) -> Response:
        if _find(user_id, memory_id, _scope(request)) is None:
            return _error(404, "no such memory")
        body = _body(EditBody, await request.read())
        return await send_commands(request, user_id, [("edit", {"memory_id": memory_id, "text": body.text})])

    @route_to_owner(app, users_table, "user_id")
    async def delete(self, request: Request, user_id: str, memory_id: str) -> Response:
        if _find(user_id, memory_id, _scope(request)) is None:
            return _error(404, "no such memory")
        return await send_commands(request, user_id, [("delete", {"memory_id": memory_id})])


def _memory_action(kind: str, doc: str) -> type[View]:
    """A POST route that sends one `kind` command for one memory (pin, unpin, restore)."""

    class Action(RegistryView):
        @route_to_owner(app, users_table, "user_id")
        async def post(self, request: Request, user_id: str, memory_id: str) -> Response:
            if _find(user_id, memory_id, _scope(request)) is None:
                return _error(404, "no such memory")
            return await send_commands(request, user_id, [(kind, {"memory_id": memory_id})])

    Action.__name__ = Action.__qualname__ = f"Memory{kind.title()}"
    Action.__doc__ = doc
    return Action


for _kind, _doc in (("pin", "POST: pin the memory (ranked higher, never TTL-deleted)."),
                    ("unpin", "POST: unpin the memory."),
                    ("restore", "POST: restore a soft-deleted memory.")):
    app.page(USER + "/memories/{memory_id}/" + _kind)(_memory_action(_kind, _doc))


@app.page(USER + "/memories/{memory_id}/history")
class MemoryHistory(RegistryView):
    """GET: the audit trail of one memory of the user, oldest first."""

    @route_to_owner(app, users_table, "user_id")
    async def get(self, request: Request, user_id: str, memory_id: str) -> Response:
        if _find(user_id, memory_id, _scope(request)) is None:
            return _error(404, "no such memory")
        return self.json({"memory_id": memory_id, "history": state().history(memory_id)})


@app.page(USER + "/export")
class UserExport(RegistryView):
    """GET: everything memstream keeps about the user (that the caller may see), as JSON."""

    @route_to_owner(app, users_table, "user_id")
    async def get(self, request: Request, user_id: str) -> Response:
        if (busy := _not_ready()) is not None:
            return busy
        scope = _scope(request)
        current = state()
        docs = sorted((m for m in _user_memories(user_id) if _in_scope(m, scope)),
                      key=lambda m: m.created_at)
        return self.json({
            "user_id": user_id,
            "blocked_topics": current.blocked_topics(user_id),
            "memories": [{**MemoryView.of(m), "history": current.history(m.id)} for m in docs],
        })


@app.page(USER)
class User(RegistryView):
    """DELETE (admin): purge the user — every memory, log and record of the user is removed;
    the audit keeps a content-free tombstone per memory."""

    @route_to_owner(app, users_table, "user_id")
    async def delete(self, request: Request, user_id: str) -> Response:
        auth.require_admin(request)
        return await send_commands(request, user_id, [("purge_user", {})])


@app.page(USER + "/blocked-topics")
class BlockedTopics(RegistryView):
    """GET: the user's blocked topics; POST {topic}: block one (facts about it are dropped)."""

    @route_to_owner(app, users_table, "user_id")
    async def get(self, request: Request, user_id: str) -> Response:
        return self.json({"user_id": user_id, "topics": state().blocked_topics(user_id)})

    @route_to_owner(app, users_table, "user_id")
    async def post(self, request: Request, user_id: str) -> Response:
        body = _body(TopicBody, await request.read())
        return await send_commands(request, user_id, [("block_topic", {"topic": body.topic})])


@app.page(USER + "/blocked-topics/{topic}")
class BlockedTopic(RegistryView):
    """DELETE: unblock a topic."""

    @route_to_owner(app, users_table, "user_id")
    async def delete(self, request: Request, user_id: str, topic: str) -> Response:
        if topic.strip().lower() not in state().blocked_topics(user_id):
            return _error(404, "no such blocked topic")
        return await send_commands(request, user_id, [("unblock_topic", {"topic": topic})])


@app.page(USER + "/commands/{command_id}")
class CommandStatus(RegistryView):
    """GET: whether a command of the user was applied, and its events (?wait=<s> to wait)."""

    @route_to_owner(app, users_table, "user_id")
    async def get(self, request: Request, user_id: str, command_id: str) -> Response:
        wait = _wait_seconds(request)
        key = applied_key(user_id, command_id)
        outcome = outcome_of_applied(applied_table.get(key))
        if outcome is None and wait:
            future = waiter.expect(user_id, command_id)
            try:
                outcome = outcome_of_applied(applied_table.get(key))  # applied meanwhile?
                if outcome is None:
                    await asyncio.wait([future], timeout=wait)
                    outcome = future.result() if future.done() else None
            finally:
                waiter.forget(user_id, command_id, future)
        if outcome is None:
            return _error(404, "no applied command with this id (yet)")
        return self.json({"command_id": command_id, **outcome.as_json()},
                         status=200 if outcome.status == "applied" else 422)
