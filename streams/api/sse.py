"""Server-sent events: `GET /v1/users/{user_id}/events`, the user's `memory.*` events, live.

The `sse` stage (`agents/sse.py`) consumes `memory.events` in the worker that owns each
partition, keeps each user's last `SSE_REPLAY_EVENTS` events in the `recent_events` table (so
the buffer moves with the partition; stored as a ring, `streams.pipeline.recent_events`) and hands
every new event to this worker's `Hub`, which fans it out to the user's connected clients. Each
SSE message is `id: <event_id>`, `event: memory.<kind>`, `data: <MemoryEvent JSON>`.

A client reconnecting with `Last-Event-ID` (header, or `?last_event_id=`) gets the events after
that one from the buffer; if the id is no longer buffered it gets one `reset` message first
(re-read the registry, then follow on). A request reaching a worker that does not own the user
is streamed through from the owner. When partitions are revoked every stream ends, and clients
resume with Last-Event-ID at the new owner. Replayed records (at-least-once) are sent once:
events are dropped by id.

A key gets only the events its `Scope` sees (streams/api/scope.py), judged for every event it is
sent, not once per connection (`StreamAccess`): while the keys and the allowlists are as they
were, the scope stays; once either changed, the stream judges its key again as the auth
middleware would judge a new request, and ends if the key was removed or may no longer act for
the user, or sees the narrowed allowlist from its next event. `StreamAuth` looks at both files
every `SSE_AUTH_CHECK_SECONDS` (at most 1 s) and wakes every open stream when either changed, so
an idle stream of a revoked key ends too, with no request made
(docs/decisions.md#event-streams-follow-their-keys).

The worker that owns the user counts the streams it serves (`StreamLimits`): in all, per key,
per key and user, and those of users with no data yet (no memory, no buffered event) apart;
past a limit a new one is a 429.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp_sse import sse_response
from faust.web import Request, Response
from yarl import URL

from streams.api import auth
from streams.pipeline.recent_events import RecentEvents, after, head_key
from streams.api.routing import FORWARDED, INVALID_USER_ID, is_user_id, owner_of
from streams.api.scope import Scope
from streams.api.hub import END_OF_STREAM, RECHECK, Hub, StreamLimits, TooManyStreams
from streams.api.views import MemstreamView, add_views
from streams.app.factory import MemstreamApp
from streams.app.faust_slots import AppSlot
from streams.read.categories import DEFAULT_PATH, load_policy
from streams.read.errors import CategoriesConfigError

log = logging.getLogger(__name__)
RETRY_AFTER_S = 5


class StreamAuth:
    """What tells this worker's open event streams that the API keys or the category allowlists
    changed, without waiting for a request to re-read them: `poll` (every
    SSE_AUTH_CHECK_SECONDS, a Faust timer; a test calls it) looks at both files, and `judge`
    decides a stream's key again as the auth middleware decides a request's."""

    def __init__(self, keys: auth.KeySource, categories_path: Path | None) -> None:
        self.keys = keys
        self.categories_path = categories_path
        self._categories = auth.FileWatch(categories_path or DEFAULT_PATH)
        self._told = keys.generation

    def poll(self) -> bool:
        """Look at the key file and the categories YAML (a stat each), re-reading what changed;
        True when the open streams must judge their keys again: something changed here, or the
        keys were re-read for a request since the last look."""
        changed = False
        if self._categories.changed():
            log.info("%s changed: open event streams judge their keys again", self._categories.path)
            load_policy.cache_clear()
            changed = True
        try:
            self.keys.ring()  # re-reads the key file if it changed
        except auth.KeysUnavailable:
            pass  # every key is refused: the streams find out as they judge
        if self.keys.generation != self._told:
            self._told = self.keys.generation
            changed = True
        return changed

    def stamp(self, principal: auth.Principal) -> tuple[int, object]:
        """What `principal`'s scope was decided from: the keys' generation and, for an agent,
        the allowlists as read (the policy object, re-read after its file changed)."""
        if principal.is_admin:
            return self.keys.generation, None
        try:
            return self.keys.generation, load_policy(self.categories_path)
        except CategoriesConfigError:
            return self.keys.generation, CategoriesConfigError

    def judge(self, key: str | None, path: str, user_id: str) -> tuple[auth.Principal, Scope] | None:
        """The principal of `key` and its scope for `path` now; None when the key is gone, may
        no longer call the route (another user, another role), its agent has no allowlist, or
        the keys or categories cannot be read: the stream ends."""
        if key is None:
            return None
        try:
            principal = self.keys.ring().principal(key)
            if principal is None:
                return None
            auth.check_route(principal, path, user_id)
            return principal, Scope.of(principal, self.categories_path)
        except (auth.KeysUnavailable, auth.AccessDenied, CategoriesConfigError):
            return None


_STREAM_AUTH: AppSlot[StreamAuth] = AppSlot("memstream_stream_auth")
"""Where a Faust app keeps its `StreamAuth`, for the events view."""


def stream_auth_of(faust_app: object) -> StreamAuth:
    return _STREAM_AUTH.of(faust_app)


class StreamAccess:
    """What one open stream may send: its key's scope, kept while `StreamAuth.stamp` is as it
    was, and judged again (`StreamAuth.judge`) before the next event once it is not.

    The first event is always judged afresh: the keys may have been re-read between the auth
    middleware's check and the stream's start, and the scope must be the one of the keys the
    stamp names."""

    def __init__(self, stream_auth: StreamAuth, key: str | None, path: str, user_id: str,
                 principal: auth.Principal) -> None:
        self._auth, self._key, self._path, self._user_id = stream_auth, key, path, user_id
        self._principal = principal
        self._stamp: tuple[int, object] | None = None
        self._scope: Scope | None = Scope.of(principal, stream_auth.categories_path)  # AccessDenied: 403

    def scope(self) -> Scope | None:
        """The scope to send the next event under; None: the key may no longer read the stream
        (and never again)."""
        if self._scope is None:
            return None
        if self._stamp is not None:
            stamp = self._auth.stamp(self._principal)
            if stamp[0] == self._stamp[0] and stamp[1] is self._stamp[1]:
                return self._scope
        judged = self._auth.judge(self._key, self._path, self._user_id)
        if judged is None:
            self._scope = None
            return None
        self._principal, self._scope = judged
        self._stamp = self._auth.stamp(self._principal)
        return self._scope


def has_data(app: MemstreamApp, user_id: str) -> bool:
    """Whether the user is known to this worker (the owner): a record in the `users` table (the
    dedup stage took a candidate of theirs, a topic was blocked) or a buffered event (the head
    of their ring in `recent_events`). One lookup each, in the worker's own partition."""
    return user_id in app.tables.users or head_key(user_id) in app.sealed.recent_events.table


class UserEvents(MemstreamView):
    """GET: the user's memory.* events as text/event-stream; Last-Event-ID resumes."""

    async def get(self, request: Request, user_id: str) -> Response:
        if not is_user_id(user_id):
            return web.json_response({"error": INVALID_USER_ID}, status=400)
        try:
            dest = owner_of(self, user_id)
            if dest is not None and request.headers.get(FORWARDED):
                raise KeyError(user_id)  # a second hop: the assignment is changing
        except KeyError:
            return web.json_response({"error": "the user's partition is moving, retry shortly"},
                                     status=503, headers={"Retry-After": "1"})
        if dest is not None:
            return await self._proxy(request, dest)
        app, hub = self.memstream, self.web_state.hub
        settings = app.settings
        key, principal = auth.presented_key(request), auth.principal_of(request)
        access = StreamAccess(stream_auth_of(self.app), key, request.path, user_id, principal)
        last_id = request.headers.get("Last-Event-ID") or request.query.get("last_event_id")
        try:  # subscribed before the buffer is read: nothing falls between
            subscriber = hub.subscribe(user_id, StreamLimits.of(settings.api),
                                       key=auth.hash_key(key) if key else principal.actor,
                                       new_user=not has_data(app, user_id))
        except TooManyStreams as exc:
            return web.json_response({"error": f"{exc}; retry later"}, status=429,
                                     headers={"Retry-After": str(RETRY_AFTER_S)})
        response: web.StreamResponse = web.Response()
        try:
            async with sse_response(request, ping_interval=settings.api.sse_ping_seconds) as response:
                buffer = RecentEvents(app.sealed.recent_events, settings.api.sse_replay_events)
                backlog, found = after(buffer.events(user_id), last_id)
                if not found:
                    await response.send(json.dumps({"last_event_id": last_id}), event="reset")
                sent: deque[str] = deque(maxlen=settings.api.sse_replay_events + settings.api.sse_queue_events)
                if not await self._follow(response, backlog, subscriber.queue, access, sent):
                    log.info("an event stream ended: its key may no longer read it")
        except ConnectionResetError:
            pass  # the client left while its backlog was being sent: no one to answer
        finally:
            hub.unsubscribe(user_id, subscriber)
        return response

    async def _follow(self, response: Any, backlog: list[dict[str, Any]], queue: asyncio.Queue[Any],
                      access: StreamAccess, sent: deque[str]) -> bool:
        """Send the backlog, then the queue's events until the stream ends; False when it ends
        because its key may no longer read it."""
        for event in backlog:
            if not await self._send(response, event, access, sent):
                return False
        closed = asyncio.ensure_future(response.wait())
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    return True
                item = getter.result()
                if item is END_OF_STREAM:
                    return True
                if item is RECHECK:
                    if access.scope() is None:
                        return False
                elif not await self._send(response, item, access, sent):
                    return False
        finally:
            closed.cancel()

    async def _proxy(self, request: web.Request, dest: URL) -> web.StreamResponse:
        """Stream the owner's answer through unchanged (the key travels in the headers)."""
        url = request.url.with_host(dest.host or "").with_port(dest.port)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "connection")}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with self.app.http_client.get(url, headers={**headers, FORWARDED: "1"},
                                            timeout=timeout) as upstream:
            if upstream.status != 200:
                return web.Response(body=await upstream.read(), status=upstream.status,
                                    content_type=upstream.content_type)
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                                   "Cache-Control": "no-cache"})
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            return response

    @staticmethod
    async def _send(response: Any, event: dict[str, Any], access: StreamAccess, sent: deque[str]) -> bool:
        """Send `event` if the stream's key sees it now; False (nothing sent) when the key may
        no longer read the stream."""
        scope = access.scope()
        if scope is None:
            return False
        if event["event_id"] in sent or not scope.sees_event(event):
            return True
        sent.append(event["event_id"])
        await response.send(json.dumps(event), id=event["event_id"], event=f"memory.{event['kind']}")
        return True


def recheck_streams(stream_auth: StreamAuth, hub: Hub) -> bool:
    """What the timer does every SSE_AUTH_CHECK_SECONDS: when the keys or the allowlists
    changed, wake every open stream of `hub` to judge its key again (True)."""
    if not stream_auth.poll():
        return False
    hub.recheck_all()
    return True


def register(app: MemstreamApp, hub: Hub) -> StreamAuth:
    """Add the events route; the streams of `hub` end when this worker's partitions are revoked,
    and judge their keys again when the keys or the allowlists change (`StreamAuth.poll`, every
    SSE_AUTH_CHECK_SECONDS). Needs the app's keys installed (`streams.api.auth.install`)."""
    add_views(app, {"/v1/users/{user_id}/events": UserEvents})
    stream_auth = StreamAuth(auth.key_source_of(app.faust.web.web_app), app.settings.read.categories_path)
    _STREAM_AUTH.attach(app.faust, stream_auth)

    async def check_stream_auth() -> None:
        try:
            recheck_streams(stream_auth, hub)
        except Exception as exc:  # noqa: BLE001 - a look at two files must never take the worker down
            log.warning("event streams' keys not checked: %s", type(exc).__name__)

    app.faust.timer(interval=app.settings.api.sse_auth_check_seconds, name="sse_auth")(check_stream_auth)

    @app.faust.on_partitions_revoked.connect
    async def end_streams_on_revoke(sender: Any, revoked: Any, **kwargs: Any) -> None:
        """Streams of users this worker may no longer own end; clients resume at the new owner."""
        if revoked:
            hub.close_all()

    return stream_auth
