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
events are dropped by id. A key gets only the events its `Scope` sees (streams/api/scope.py).
The worker that owns the user counts the streams it serves: past `SSE_MAX_STREAMS` in all or
`SSE_MAX_STREAMS_PER_USER` for one user, a new one is a 429 (`StreamLimits`).
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp_sse import sse_response
from faust.web import Request, Response
from yarl import URL

from streams.api import auth
from streams.pipeline.recent_events import RecentEvents, after
from streams.api.routing import FORWARDED, INVALID_USER_ID, is_user_id, owner_of
from streams.api.scope import Scope
from streams.api.hub import END_OF_STREAM, Hub, StreamLimits, TooManyStreams
from streams.api.views import MemstreamView, add_views
from streams.app.factory import MemstreamApp

log = logging.getLogger(__name__)
RETRY_AFTER_S = 5


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
        scope = Scope.of(auth.principal_of(request), settings.read.categories_path)
        last_id = request.headers.get("Last-Event-ID") or request.query.get("last_event_id")
        try:  # subscribed before the buffer is read: nothing falls between
            subscriber = hub.subscribe(user_id, StreamLimits.of(settings.api))
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
                for event in backlog:
                    await self._send(response, event, scope, sent)
                closed = asyncio.ensure_future(response.wait())
                try:
                    while True:
                        getter = asyncio.ensure_future(subscriber.queue.get())
                        await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
                        if not getter.done():
                            getter.cancel()
                            break
                        item = getter.result()
                        if item is END_OF_STREAM:
                            break
                        await self._send(response, item, scope, sent)
                finally:
                    closed.cancel()
        except ConnectionResetError:
            pass  # the client left while its backlog was being sent: no one to answer
        finally:
            hub.unsubscribe(user_id, subscriber)
        return response

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
    async def _send(response: Any, event: dict[str, Any], scope: Scope, sent: deque[str]) -> None:
        if event["event_id"] in sent or not scope.sees_event(event):
            return
        sent.append(event["event_id"])
        await response.send(json.dumps(event), id=event["event_id"], event=f"memory.{event['kind']}")


def register(app: MemstreamApp, hub: Hub) -> None:
    """Add the events route; the streams of `hub` end when this worker's partitions are revoked."""
    add_views(app, {"/v1/users/{user_id}/events": UserEvents})

    @app.faust.on_partitions_revoked.connect
    async def end_streams_on_revoke(sender: Any, revoked: Any, **kwargs: Any) -> None:
        """Streams of users this worker may no longer own end; clients resume at the new owner."""
        if revoked:
            hub.close_all()
