"""How many HTTP connections the worker's web server holds, and how long a slow or idle one may
keep its file descriptor (docs/decisions.md#web-cannot-starve-ingestion).

The web server shares its process, and so its open-file limit, with the stream: the Kafka
clients, RocksDB's files and the embedding model. Thousands of connections that send their
headers a byte every few seconds once took every descriptor, and a turn then failed in ingest
with EMFILE. Here:

- A connection past `WEB_MAX_CONNECTIONS` is answered 503 and closed as it opens
  (`memstream_http_connections_refused_total`); 0 means a quarter of the soft `RLIMIT_NOFILE`,
  at most 2048 (`max_connections`). Event streams are connections too: they get at most three
  quarters of the cap (`max_event_streams`), so /health and queries always find room.
- A request's line and headers must be in `WEB_HEADER_TIMEOUT_SECONDS` after the connection
  opened, or after the first byte of the next request on a kept-alive connection: past it the
  connection is answered 408 and closed. Its body must be in `WEB_BODY_TIMEOUT_SECONDS` after
  its headers, or the connection is closed.
- A kept-alive connection idle for `WEB_KEEPALIVE_SECONDS` is closed: aiohttp's own
  `keepalive_timeout`.
- A request being answered is never cut by these: an SSE stream lasts as long as it streams.
- Every close for time is counted in `memstream_http_connections_closed_total{reason}`.

aiohttp 3.14 times neither a head nor a body: its keep-alive timer, from the connection's start
or its last answer, closes a connection still waiting for a head only after the whole keep-alive
time, however slowly its bytes trickle in, and never one whose body is being read. Hence
`GuardedRequestHandler`: aiohttp's protocol with the cap and the two deadlines.
It learns that a request began from its server's request factory, and that its answer is done
from `finish_response`: both public hooks of aiohttp's server. It does not parse: bytes that
arrive after a body is complete start the next head's deadline (when they come during an
answer, from the answer's end); a pipelined head that came in the same read as the request
before it is left to the keep-alive timeout.
"""
from __future__ import annotations

import asyncio
import json
import resource
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_server import Server
from faust.web.drivers.aiohttp import Web as AiohttpWeb

from streams.errors import MemstreamError
from streams.observability import metrics
from streams.settings import ApiSettings

if TYPE_CHECKING:
    from streams.app.factory import MemstreamApp

AUTO_SHARE = 4
"""With WEB_MAX_CONNECTIONS=0 the web server takes 1/AUTO_SHARE of the soft open-file limit."""
AUTO_MAX = 2048
"""… and at most this many: an event stream each for SSE_MAX_STREAMS (1000) clients, as many
again for requests."""
AUTO_MIN = 16
EVENT_STREAM_SHARE = 0.75
"""The share of the connection cap event streams may take; the rest stays for requests."""


class WebDriverError(MemstreamError):
    """The Faust app's web driver is not the aiohttp one this module guards."""


class BodyTimeout(MemstreamError, web.HTTPRequestTimeout):
    """What reading a request's body raises once WEB_BODY_TIMEOUT_SECONDS passed: an HTTP error,
    so the handler ends as on any 4xx (the connection is closed; no one reads the answer)."""


def body_timeout() -> BodyTimeout:
    return BodyTimeout(reason="the request's body took too long")


def open_file_limit() -> int | None:
    """The process's soft limit of open files (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def max_connections(api: ApiSettings, open_files: int | None = None) -> int:
    """The connection cap: WEB_MAX_CONNECTIONS, or with 0 a share of `open_files` (the soft
    RLIMIT_NOFILE by default) between AUTO_MIN and AUTO_MAX."""
    if api.web_max_connections:
        return api.web_max_connections
    limit = open_file_limit() if open_files is None else open_files
    return AUTO_MAX if limit is None else max(AUTO_MIN, min(AUTO_MAX, limit // AUTO_SHARE))


def max_event_streams(api: ApiSettings, open_files: int | None = None) -> int:
    """SSE_MAX_STREAMS, lowered to EVENT_STREAM_SHARE of the connection cap."""
    return max(1, min(api.sse_max_streams, int(max_connections(api, open_files) * EVENT_STREAM_SHARE)))


@dataclass(frozen=True)
class ConnectionLimits:
    """The cap and the timeouts of the web server's connections (seconds)."""

    max_connections: int
    header_timeout: float
    body_timeout: float
    keepalive_timeout: float

    @classmethod
    def of(cls, api: ApiSettings) -> ConnectionLimits:
        return cls(max_connections(api), api.web_header_timeout_seconds,
                   api.web_body_timeout_seconds, api.web_keepalive_seconds)


def _canned(status: str, error: str, **more: str) -> bytes:
    """A whole HTTP answer that closes its connection, written with no request read: JSON, as
    every error of the API (no page to frame or script: `nosniff` is the one browser header)."""
    body = json.dumps({"error": error}).encode()
    headers = {"Content-Type": "application/json; charset=utf-8", "Content-Length": str(len(body)),
               "Connection": "close", "X-Content-Type-Options": "nosniff", **more}
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"HTTP/1.1 {status}\r\n{head}\r\n".encode() + body


REFUSED = _canned("503 Service Unavailable", "this worker holds all the connections it may; retry shortly",
                  **{"Retry-After": "1"})
HEADER_TIMED_OUT = _canned("408 Request Timeout", "the request's headers took too long")


class ConnectionGuard:
    """Counts the connections open on one web server against its cap."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open = 0

    def admit(self) -> bool:
        """Count one more open connection; False (and counted as refused) at the cap."""
        if self.open >= self.limits.max_connections:
            metrics.HTTP_CONNECTIONS_REFUSED.inc()
            return False
        self.open += 1
        metrics.HTTP_CONNECTIONS_OPEN.inc()
        return True

    def release(self) -> None:
        """An admitted connection closed."""
        self.open -= 1
        metrics.HTTP_CONNECTIONS_OPEN.dec()


class GuardedRequestHandler(RequestHandler):
    """aiohttp's HTTP protocol (one a connection), admitted under the cap, with the head and
    body deadlines; idle connections are aiohttp's `keepalive_timeout`'s."""

    __slots__ = ("_guard", "_admitted", "_in_request", "_body", "_head_timer", "_body_timer",
                 "_next_head_begun", "_closed_for", "_idle_since")

    def __init__(self, manager: GuardedServer, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._guard = manager.guard
        self._admitted = False
        self._in_request = False  # from its head being taken to its answer being sent
        self._body: StreamReader | None = None  # the last request's
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._next_head_begun = False  # bytes of a next (pipelined) request while answering
        self._closed_for: str | None = None  # the timeout it was closed for
        self._idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self._guard.admit():
            refused = cast(asyncio.Transport, transport)
            refused.write(REFUSED)
            refused.close()
            return
        self._admitted = True
        super().connection_made(transport)
        self._idle_since = self._loop.time()
        self._expect_head()

    def data_received(self, data: bytes) -> None:
        if not self._admitted:
            return
        if data and self._body_done():
            if self._in_request:
                self._next_head_begun = True
            elif self._head_timer is None:
                self._expect_head()  # a kept-alive connection's next request begins
        super().data_received(data)
        if self._body_timer is not None and self._body_done():
            self._body_timer.cancel()
            self._body_timer = None

    def request_started(self, body: StreamReader) -> None:
        """Its head is in and its handler about to run (called by `GuardedServer`)."""
        self._cancel_timers()
        self._in_request, self._next_head_begun, self._body = True, False, body
        if not body.is_eof():
            self._body_timer = self._loop.call_later(self._guard.limits.body_timeout, self._body_expired)

    async def finish_response(self, request: BaseRequest, resp: web.StreamResponse,
                              start_time: float | None) -> tuple[web.StreamResponse, bool]:
        try:
            return await super().finish_response(request, resp, start_time)
        finally:
            self._in_request = False
            self._idle_since = self._loop.time()
            if self._next_head_begun:
                self._expect_head()

    def connection_lost(self, exc: BaseException | None) -> None:
        if not self._admitted:
            return
        self._admitted = False
        self._cancel_timers()
        idle = self._loop.time() - self._idle_since >= self._guard.limits.keepalive_timeout
        if idle and self._closed_for is None and not self._in_request:
            metrics.HTTP_CONNECTIONS_CLOSED.labels(reason="idle_timeout").inc()  # aiohttp closed it
        self._guard.release()
        super().connection_lost(exc)  # gives a request being read a ConnectionResetError
        if self._closed_for == "body_timeout" and self._in_request and self._body is not None:
            self._body.set_exception(body_timeout())  # and its handler sees the timeout again

    def _body_done(self) -> bool:
        return self._body is None or self._body.is_eof()

    def _expect_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self._loop.call_later(self._guard.limits.header_timeout, self._head_expired)

    def _head_expired(self) -> None:
        self._head_timer = None
        if self._in_request or self.transport is None:
            return
        self._close_for("header_timeout", HEADER_TIMED_OUT)

    def _body_expired(self) -> None:
        self._body_timer = None
        body = self._body
        if body is None or body.is_eof() or self.transport is None:
            return
        if self._in_request:  # the handler, reading it, ends with a 4xx rather than a logged 500
            body.set_exception(body_timeout())
        self._close_for("body_timeout")

    def _close_for(self, reason: str, answer: bytes = b"") -> None:
        metrics.HTTP_CONNECTIONS_CLOSED.labels(reason=reason).inc()
        self._closed_for = reason
        if answer and self.transport is not None:
            self.transport.write(answer)
        self.force_close()

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None


class GuardedServer(Server):
    """aiohttp's low-level server, making `GuardedRequestHandler`s under one `ConnectionGuard`."""

    def __init__(self, handler: Any, *, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self.guard = guard
        make_request = self.request_factory

        def start_request(message: RawRequestMessage, payload: StreamReader, protocol: RequestHandler,
                          writer: AbstractStreamWriter, task: asyncio.Task[None]) -> BaseRequest:
            if isinstance(protocol, GuardedRequestHandler):
                protocol.request_started(payload)
            return make_request(message, payload, protocol, writer, task)

        self.request_factory = start_request

    def __call__(self) -> GuardedRequestHandler:
        return GuardedRequestHandler(self, loop=self._loop, **self._kwargs)


class GuardedRunner(web.AppRunner):
    """aiohttp's runner of an application, serving it through a `GuardedServer`."""

    def __init__(self, app: web.Application, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(app, keepalive_timeout=guard.limits.keepalive_timeout, **kwargs)
        self.guard = guard

    async def _make_server(self) -> Server:
        plain = await super()._make_server()  # the app started and frozen, its handler's options set
        return GuardedServer(plain.request_handler, request_factory=plain.request_factory,
                             handler_cancellation=plain.handler_cancellation, guard=self.guard,
                             **plain._kwargs)


def install(app: MemstreamApp) -> ConnectionGuard:
    """Serve `app`'s web application through a `GuardedRunner` (before the server starts).

    Faust's aiohttp driver makes its runner when it is created and starts it with the worker;
    the runner is swapped there (Faust has no setting for it), with the driver's own options
    (no access log).
    """
    driver = app.faust.web
    if not isinstance(driver, AiohttpWeb):
        raise WebDriverError(f"the web driver is {type(driver).__name__}, not Faust's aiohttp driver")
    guard = ConnectionGuard(ConnectionLimits.of(app.settings.api))
    driver._runner = GuardedRunner(driver.web_app, guard, access_log=None)
    metrics.HTTP_CONNECTIONS_MAX.set(guard.limits.max_connections)
    return guard
