"""The registry API: what memstream knows about a user, and the user's (or an admin's) changes.

Reads answer from the tables of the worker that owns the user (`streams.api.routing`). Writes
never touch a table: they send commands to `memory.commands` and answer 202 with the command
ids; `?wait=1` (or `?wait=<seconds>`) answers once the commands stage has applied them (200), or
dead-lettered one (422), or the wait ran out (202). `GET .../commands/{id}` tells the outcome
later. An `Idempotency-Key` header names the commands within the caller's namespace
(`streams.api.command_ids`), so a retried write applies once; the name is bound to the write it
was given for (method, path, body), and reusing it for another write is a 409
(`idempotency_key_reused`), never the first write's outcome.

Every answer shows only what the caller's `Scope` sees, and so do the documents it shows: a
memory's links (`related_ids`, `relations`, `consolidated_from`, `superseded_by`) and its audit
entries' references to memories the caller may not see are left out (`Scope.references`), as
fetching such a memory is a 404.

Access: a key acts only for its users (streams/api/auth.py); what it sees and changes is decided
by its `Scope` (streams/api/scope.py), and anything outside it is answered as if it did not exist
(404). Purging a user and answering a consent proposal need an admin key: consent is the user's
own answer (given in chat, or relayed by the backend), never an agent's.
"""
from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar
from urllib.parse import quote

from aiohttp import web
from faust.web import Request, Response, View
from pydantic import BaseModel, ValidationError

from streams.errors import MemstreamError
from streams.api import auth, command_ids
from streams.api.command_waiter import (IDEMPOTENCY_KEY_REUSED, Outcome, outcome_of_applied,
                                        refused_as_reused)
from streams.api.registry_models import EditBody, MemoryView, TopicBody
from streams.api.routing import route_to_owner
from streams.api.scope import Scope
from streams.api.views import MemstreamView, add_views, error
from streams.memory.consent import pending_proposals
from streams.memory.model import Memory
from streams.memory.tables import command_key
from topics.commands import Command, CommandKind
from topics.schema_errors import explain

if TYPE_CHECKING:
    from streams.app.factory import MemstreamApp

USER = "/v1/users/{user_id}"
LIST_LIMIT_MAX = 5000
IDEMPOTENCY_KEY_MAX = 150


class BadRequest(MemstreamError, ValueError):
    """A malformed request; answered 400 with the message."""


_Body = TypeVar("_Body", bound=BaseModel)


def _body(model: type[_Body], raw: bytes) -> _Body:
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        raise BadRequest(f"invalid body: {explain(exc, limit=5)}") from None


def _matches(memory: Memory, categories: set[str], state_: str | None, pinned: str | None,
             text: str) -> bool:
    if categories and memory.category.casefold() not in categories:
        return False
    if state_ and memory.state != state_:
        return False
    if memory.state == "purged" and state_ != "purged":
        return False  # a content-free tombstone (streams.lifecycle.forgetting): nothing to list
    if pinned in ("true", "false") and memory.pinned != (pinned == "true"):
        return False
    haystack = " ".join([memory.summary, *memory.tags, *memory.entities]).casefold()
    return not text or text in haystack


def _int(request: Request, name: str, default: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    # ASCII digits only ("²" is a digit to str.isdigit but not to int) and no more of them
    # than `high` has (int() refuses texts of over 4300 digits).
    if not (raw.isascii() and raw.isdigit()) or len(raw) > len(str(high)) or int(raw) > high:
        raise BadRequest(f"{name} must be an integer between 0 and {high}")
    return int(raw)


def _status_url(user_id: str, command_id: str) -> str:
    """The command's status route, each id percent-encoded: it goes into a Location header,
    where a raw control character would break the answer."""
    return f"/v1/users/{quote(user_id, safe='')}/commands/{quote(command_id, safe='')}"


def _outcome_json(outcome: Outcome, scope: Scope) -> dict[str, Any]:
    """An outcome as its caller sees it: only the events of its scope."""
    return {**outcome.as_json(), "events": scope.events(outcome.events)}


def _reused(refused: bool = False) -> web.Response:
    """The answer to a write whose Idempotency-Key names commands of another write: none was
    sent, or (`refused`) the commands stage refused those (another write of the name came first)."""
    done = ("the commands it named were refused" if refused else "nothing was done")
    return error(409, "this Idempotency-Key was used for another write (another method, path or "
                 f"body); {done}: use a new key for this one", IDEMPOTENCY_KEY_REUSED)


class RegistryView(MemstreamView):
    """A registry route: the caller's scope, the user's memories, commands sent and awaited;
    the registry's named errors become their HTTP answers."""

    async def dispatch(self, request: Any) -> Any:
        try:
            return await super().dispatch(request)
        except BadRequest as exc:
            return error(400, str(exc))

    def scope(self, request: Request) -> Scope:
        return Scope.of(auth.principal_of(request), self.memstream.settings.read.categories_path)

    def user_memories(self, user_id: str) -> list[Memory]:
        return self.memstream.store.user_memories(user_id)

    def find(self, user_id: str, memory_id: str, scope: Scope) -> Memory | None:
        """The user's memory, if it exists, is the user's, and the caller may see it."""
        memory = self.memstream.store.state().memory(memory_id)
        if memory is None or memory.user_id != user_id or not scope.sees_memory(memory):
            return None
        return memory

    def visible(self, user_id: str, scope: Scope) -> Callable[[str], bool]:
        """Whether the caller may see the memory of an id (`find`'s rule, without reading the
        table): a memory of the user's, in the caller's scope."""
        index = self.memstream.store.user_index(user_id)

        def sees(memory_id: str) -> bool:
            memory = index.stored(memory_id)
            return memory is not None and scope.sees_memory(memory)
        return sees

    def shown(self, memory: Memory, scope: Scope, visible: Callable[[str], bool]) -> dict[str, Any]:
        """A memory as the caller sees it: its links to what it may not see left out."""
        return scope.references(MemoryView.of(memory), visible)

    def shown_history(self, memory_id: str, scope: Scope,
                      visible: Callable[[str], bool]) -> list[dict[str, Any]]:
        """A memory's audit trail as the caller sees it (`Scope.references` of each entry's
        meta)."""
        return [scope.audit_entry(entry, visible)
                for entry in self.memstream.store.state().history(memory_id)]

    def wait_seconds(self, request: Request) -> float:
        limit = self.memstream.settings.api.command_wait_max_seconds
        raw = request.query.get("wait")
        if raw in (None, "", "0", "false"):
            return 0.0
        if raw in ("1", "true"):
            return limit
        try:
            seconds = float(raw)
        except ValueError:
            raise BadRequest("wait must be 1, true or a number of seconds") from None
        if not 0 <= seconds <= limit:
            raise BadRequest(f"wait must be between 0 and {limit} seconds")
        return seconds

    def applied_outcome(self, user_id: str, command_id: str) -> Outcome | None:
        """The outcome of the command `command_id` (as sent: namespaced), if applied."""
        applied = self.memstream.sealed.memory.applied
        return outcome_of_applied(applied.get(command_key(user_id, command_id)))

    def binding(self, request: Request, body: BaseModel | None) -> str:
        """What this write's command ids are bound to (`streams.api.command_ids.binding`)."""
        key = command_ids.binding_key(self.memstream.outputs.sealer.keys.master_key)
        return command_ids.binding(key, request.method, request.path,
                                   body.model_dump_json() if body is not None else "")

    async def send_commands(self, request: Request, user_id: str,
                            specs: Iterable[tuple[CommandKind, dict[str, Any]]],
                            body: BaseModel | None = None) -> web.Response:
        """Send one command per (kind, fields); answer as the module docstring says.

        The caller names its commands `<key>`, `<key>:1`, …; each is sent under its namespaced id
        (`streams.api.command_ids`) and answered under its name, bound to this write (its method,
        path and `body`, as parsed): a name applied for another write is a 409."""
        wait = self.wait_seconds(request)
        waiter = self.web_state.command_waiter
        principal = auth.principal_of(request)
        scope = self.scope(request)
        base_id = request.headers.get("Idempotency-Key") or uuid.uuid4().hex
        if len(base_id) > IDEMPOTENCY_KEY_MAX:
            # a write may send thousands of commands, each id `<namespace>/<key>:<n>` within 200
            # characters
            raise BadRequest(f"Idempotency-Key must be at most {IDEMPOTENCY_KEY_MAX} characters")
        binding = self.binding(request, body)
        # Event time: the user's clock (the latest time of their turns), so a change made through
        # the registry sits on the same time line as the conversation (a replay of last year's
        # conversation and its edits ages alike). A user with no turns yet: the wall clock.
        now = self.memstream.store.user_clock(user_id) or datetime.now(timezone.utc)
        names: dict[str, str] = {}  # the id sent -> the caller's name of it
        commands = []
        for i, (kind, fields) in enumerate(specs):
            name = base_id if i == 0 else f"{base_id}:{i}"
            command_id = command_ids.command_id(principal, name)
            names[command_id] = name
            commands.append(Command(command_id=command_id, kind=kind, user_id=user_id, ts=now,
                                    actor=principal.actor[:200], binding=binding, **fields))
        outcomes: dict[str, Outcome | None] = {}
        futures: dict[str, asyncio.Future[Outcome]] = {}
        for command in commands:
            outcomes[command.command_id] = self.applied_outcome(user_id, command.command_id)
        if any(o is not None and o.bound_elsewhere(binding) for o in outcomes.values()):
            return _reused()
        for command in commands:
            if wait and outcomes[command.command_id] is None:
                futures[command.command_id] = waiter.expect(user_id, command.command_id, binding)
        try:
            for command in commands:
                if outcomes[command.command_id] is None:
                    await self.memstream.outputs.command(command, in_transit=True)
            if futures:
                await asyncio.wait(futures.values(), timeout=wait)
            for command_id, future in futures.items():
                outcomes[command_id] = future.result() if future.done() else None
        finally:
            for command_id, future in futures.items():
                waiter.forget(user_id, command_id, future)
        if any(o is not None and refused_as_reused(o) for o in outcomes.values()):
            return _reused(refused=True)
        statuses = {o.status if o else "accepted" for o in outcomes.values()}
        status = "rejected" if "rejected" in statuses else "accepted" if "accepted" in statuses else "applied"
        if not commands:
            status = "applied"
        code = {"applied": 200, "rejected": 422, "accepted": 202}[status]
        answers = []
        for command in commands:
            outcome = outcomes[command.command_id]
            name = names[command.command_id]
            answers.append({"command_id": name, "kind": command.kind,
                            "status_url": _status_url(user_id, name),
                            **(_outcome_json(outcome, scope) if outcome
                               else {"status": "accepted", "events": []})})
        headers = {"Location": answers[0]["status_url"]} if answers else {}
        return web.json_response({"status": status, "commands": answers}, status=code, headers=headers)


# --- routes -----------------------------------------------------------------------------------
class UserMemories(RegistryView):
    """GET: the user's memories, newest first, filtered (`category` (repeatable or comma list),
    `state`, `pinned`, `q` substring, `thread_id`: made in that thread), with provenance and
    timestamps. DELETE: delete them all (soft delete, restorable)."""

    @route_to_owner()
    async def get(self, request: Request, user_id: str) -> Response:
        if (busy := self.not_ready()) is not None:
            return busy
        scope = self.scope(request)
        categories = {c.strip().casefold() for raw in request.query.getall("category", [])
                      for c in raw.split(",") if c.strip()}
        limit = _int(request, "limit", 1000, LIST_LIMIT_MAX)
        offset = _int(request, "offset", 0, 10**9)
        text = request.query.get("q", "").strip().casefold()
        thread = request.query.get("thread_id")
        found = [m for m in scope.memories(self.user_memories(user_id)) if _matches(
            m, categories, request.query.get("state"), request.query.get("pinned"), text)
            and (thread is None or m.thread_id == thread)]
        found.sort(key=lambda m: m.created_at, reverse=True)
        visible = self.visible(user_id, scope)
        return self.json({"user_id": user_id, "total": len(found),
                          "items": [self.shown(m, scope, visible) for m in found[offset:offset + limit]]})

    @route_to_owner()
    async def delete(self, request: Request, user_id: str) -> Response:
        if (busy := self.not_ready()) is not None:
            return busy
        scope = self.scope(request)
        targets = sorted((m for m in scope.memories(self.user_memories(user_id))
                          if m.state == "active"), key=lambda m: m.id)
        return await self.send_commands(request, user_id,
                                        [("delete", {"memory_id": m.id}) for m in targets])


class UserMemory(RegistryView):
    """GET one memory; PATCH {text} edits its summary; DELETE soft-deletes it."""

    @route_to_owner()
    async def get(self, request: Request, user_id: str, memory_id: str) -> Response:
        scope = self.scope(request)
        memory = self.find(user_id, memory_id, scope)
        if memory is None:
            return error(404, "no such memory")
        return self.json(self.shown(memory, scope, self.visible(user_id, scope)))

    @route_to_owner()
    async def patch(self, request: Request, user_id: str, memory_id: str) -> Response:
        if self.find(user_id, memory_id, self.scope(request)) is None:
            return error(404, "no such memory")
        body = _body(EditBody, await request.read())
        return await self.send_commands(request, user_id,
                                        [("edit", {"memory_id": memory_id, "text": body.text})], body)

    @route_to_owner()
    async def delete(self, request: Request, user_id: str, memory_id: str) -> Response:
        if self.find(user_id, memory_id, self.scope(request)) is None:
            return error(404, "no such memory")
        return await self.send_commands(request, user_id, [("delete", {"memory_id": memory_id})])


def _memory_action(kind: CommandKind, doc: str) -> type[View]:
    """A POST route that sends one `kind` command for one memory (pin, unpin, restore)."""

    class Action(RegistryView):
        @route_to_owner()
        async def post(self, request: Request, user_id: str, memory_id: str) -> Response:
            if self.find(user_id, memory_id, self.scope(request)) is None:
                return error(404, "no such memory")
            return await self.send_commands(request, user_id, [(kind, {"memory_id": memory_id})])

    Action.__name__ = Action.__qualname__ = f"Memory{kind.title()}"
    Action.__doc__ = doc
    return Action


class MemoryHistory(RegistryView):
    """GET: the audit trail of one memory of the user, oldest first."""

    @route_to_owner()
    async def get(self, request: Request, user_id: str, memory_id: str) -> Response:
        scope = self.scope(request)
        if self.find(user_id, memory_id, scope) is None:
            return error(404, "no such memory")
        return self.json({"memory_id": memory_id, "history": self.shown_history(
            memory_id, scope, self.visible(user_id, scope))})


class UserExport(RegistryView):
    """GET: everything memstream keeps about the user (that the caller may see), as JSON."""

    @route_to_owner()
    async def get(self, request: Request, user_id: str) -> Response:
        if (busy := self.not_ready()) is not None:
            return busy
        scope = self.scope(request)
        current = self.memstream.store.state()
        docs = sorted(scope.memories(self.user_memories(user_id)), key=lambda m: m.created_at)
        visible = self.visible(user_id, scope)
        return self.json({
            "user_id": user_id,
            "blocked_topics": scope.blocked_topics(current.blocked_topics(user_id)),
            "proposals": scope.proposals(pending_proposals(current, user_id, None)),
            "memories": [{**self.shown(m, scope, visible),
                          "history": self.shown_history(m.id, scope, visible)} for m in docs],
        })


class User(RegistryView):
    """DELETE (admin): purge the user — every memory, log and record of the user is removed;
    the audit keeps a content-free tombstone per memory."""

    @route_to_owner()
    async def delete(self, request: Request, user_id: str) -> Response:
        auth.require_admin(request)
        return await self.send_commands(request, user_id, [("purge_user", {})])


class BlockedTopics(RegistryView):
    """GET: the user's blocked topics; POST {topic}: block one (facts about it are dropped).
    Seen and changed by a key whose scope has the blocked topics' category."""

    @route_to_owner()
    async def get(self, request: Request, user_id: str) -> Response:
        topics = self.memstream.store.state().blocked_topics(user_id)
        return self.json({"user_id": user_id, "topics": self.scope(request).blocked_topics(topics)})

    @route_to_owner()
    async def post(self, request: Request, user_id: str) -> Response:
        if not self.scope(request).sees_blocked_topics:
            raise auth.AccessDenied("this key may not manage blocked topics")
        body = _body(TopicBody, await request.read())
        return await self.send_commands(request, user_id, [("block_topic", {"topic": body.topic})],
                                        body)


class BlockedTopic(RegistryView):
    """DELETE: unblock a topic."""

    @route_to_owner()
    async def delete(self, request: Request, user_id: str, topic: str) -> Response:
        topics = self.scope(request).blocked_topics(self.memstream.store.state().blocked_topics(user_id))
        if topic.strip().lower() not in topics:
            return error(404, "no such blocked topic")
        return await self.send_commands(request, user_id, [("unblock_topic", {"topic": topic})])


class Proposals(RegistryView):
    """GET: the user's profile changes waiting for consent (seed 001 §10), oldest first."""

    @route_to_owner()
    async def get(self, request: Request, user_id: str) -> Response:
        items = self.scope(request).proposals(pending_proposals(
            self.memstream.store.state(), user_id, self.memstream.store.user_clock(user_id)))
        return self.json({"user_id": user_id, "items": items})


def _proposal_action(decision: str, doc: str) -> type[View]:
    """A POST route (admin key) that answers one pending proposal with a `consent` command."""

    class Action(RegistryView):
        @route_to_owner()
        async def post(self, request: Request, user_id: str, proposal_id: str) -> Response:
            auth.require_admin(request)
            pending = self.scope(request).proposals(pending_proposals(
                self.memstream.store.state(), user_id, self.memstream.store.user_clock(user_id)))
            if not any(p["id"] == proposal_id for p in pending):
                return error(404, "no such pending proposal")
            return await self.send_commands(request, user_id, [
                ("consent", {"proposal_id": proposal_id, "decision": decision})])

    Action.__name__ = Action.__qualname__ = f"Proposal{decision.title()}"
    Action.__doc__ = doc
    return Action


class CommandStatus(RegistryView):
    """GET: whether one of the caller's commands for the user was applied, and its events
    (?wait=<s> to wait). `command_id` is the caller's name of it: only the caller's own
    commands are found (`streams.api.command_ids`)."""

    @route_to_owner()
    async def get(self, request: Request, user_id: str, command_id: str) -> Response:
        wait = self.wait_seconds(request)
        waiter = self.web_state.command_waiter
        scope = self.scope(request)
        sent_id = command_ids.command_id(auth.principal_of(request), command_id)
        outcome = self.applied_outcome(user_id, sent_id)
        if outcome is None and wait:
            future = waiter.expect(user_id, sent_id)
            try:
                outcome = self.applied_outcome(user_id, sent_id)  # applied meanwhile?
                if outcome is None:
                    await asyncio.wait([future], timeout=wait)
                    outcome = future.result() if future.done() else None
            finally:
                waiter.forget(user_id, sent_id, future)
        if outcome is None:
            return error(404, "no applied command with this id (yet)")
        return self.json({"command_id": command_id, **_outcome_json(outcome, scope)},
                         status=200 if outcome.status == "applied" else 422)


_MEMORY_ACTIONS: tuple[tuple[CommandKind, str], ...] = (
    ("pin", "POST: pin the memory (ranked higher, never TTL-deleted)."),
    ("unpin", "POST: unpin the memory."),
    ("restore", "POST: restore a soft-deleted memory."),
)
"""The one-command routes of a memory (`_memory_action`): the command's kind, the route's doc."""

ROUTES: dict[str, type[View]] = {
    USER + "/memories": UserMemories,
    USER + "/memories/{memory_id}": UserMemory,
    **{USER + "/memories/{memory_id}/" + kind: _memory_action(kind, doc)
       for kind, doc in _MEMORY_ACTIONS},
    USER + "/memories/{memory_id}/history": MemoryHistory,
    USER + "/export": UserExport,
    USER: User,
    USER + "/blocked-topics": BlockedTopics,
    USER + "/blocked-topics/{topic}": BlockedTopic,
    USER + "/commands/{command_id}": CommandStatus,
    USER + "/proposals": Proposals,
    **{USER + "/proposals/{proposal_id}/" + decision: _proposal_action(decision, doc)
       for decision, doc in (
           ("accept", "POST: apply the proposed profile change (the user's consent)."),
           ("reject", "POST: drop the proposed profile change; the current value stays."))},
}


def register(app: MemstreamApp) -> None:
    """Add the registry routes to `app`'s web server."""
    add_views(app, ROUTES)
