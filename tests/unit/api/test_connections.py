"""The web server's connections (streams/api/connections.py): a cap, a deadline for a request's
head and for its body, aiohttp's keep-alive timeout for idle ones, and event streams untouched.

Most tests drive the server's protocol directly on an event loop whose clock moves only when the
test moves it, so no test waits for a timeout and none depends on the machine's speed; the last
two go through real sockets with the real runner and site, asserting only what must happen
eventually.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web
from aiohttp_sse import sse_response

from streams.api import connections
from streams.api.connections import (
    AUTO_MAX,
    ConnectionGuard,
    ConnectionLimits,
    GuardedRunner,
    GuardedServer,
)
from streams.api.hub import StreamLimits
from streams.observability.metrics import REGISTRY
from streams.settings import Settings

LIMITS = ConnectionLimits(max_connections=3, header_timeout=10.0, body_timeout=30.0,
                          keepalive_timeout=75.0)
HEALTH = b"GET /health HTTP/1.1\r\nHost: worker\r\n\r\n"
SETTLE_TICKS = 20
"""Loop iterations that let every callback a moved clock made due run (no time passes)."""
GUARD_S = 10.0
"""Real seconds the socket tests wait at most for what must happen: a guard, never a measure."""


class FakeClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock moves only with `advance`."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 1000.0

    def time(self) -> float:
        return self.now


async def settle() -> None:
    for _ in range(SETTLE_TICKS):
        await asyncio.sleep(0)


async def advance(seconds: float) -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, FakeClockLoop)
    loop.now += seconds
    await settle()


class FakeTransport(asyncio.Transport):
    """One client's end, as the protocol sees it: what was written, and whether it was closed
    (closing calls the protocol's `connection_lost` soon after, as a socket transport does)."""

    def __init__(self, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self.protocol = protocol
        self.sent = bytearray()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.closed:
            self.sent += data

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 6066)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


class Client:
    """A connection to `server`, made and fed by hand."""

    def __init__(self, server: GuardedServer) -> None:
        self.protocol = server()
        self.transport = FakeTransport(self.protocol)
        self.protocol.connection_made(self.transport)

    async def send(self, data: bytes) -> None:
        self.protocol.data_received(data)
        await settle()

    @property
    def answer(self) -> bytes:
        return bytes(self.transport.sent)


def closed(reason: str) -> float:
    return REGISTRY.get_sample_value("memstream_http_connections_closed_total", {"reason": reason}) or 0.0


def refused() -> float:
    return REGISTRY.get_sample_value("memstream_http_connections_refused_total") or 0.0


def counts() -> dict[str, float]:
    return {"header": closed("header_timeout"), "body": closed("body_timeout"),
            "idle": closed("idle_timeout"), "refused": refused()}


def moved(before: dict[str, float], **expected: float) -> bool:
    after = counts()
    return {k: after[k] - before[k] for k in before} == {k: expected.get(k, 0.0) for k in before}


class App:
    """A web app with a quick route, one that reads a body, and an event stream the test ends."""

    def __init__(self) -> None:
        self.web_app = web.Application()
        self.end_stream = asyncio.Event()
        self.handled: list[str] = []
        self.web_app.router.add_get("/health", self.health)
        self.web_app.router.add_post("/echo", self.echo)
        self.web_app.router.add_get("/events", self.events)

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def echo(self, request: web.Request) -> web.Response:
        try:
            body = await request.read()
        except web.HTTPException as exc:
            self.handled.append(f"echo {exc.status}")
            raise
        return web.json_response({"bytes": len(body)})

    async def events(self, request: web.Request) -> web.StreamResponse:
        async with sse_response(request, ping_interval=5) as response:
            await response.send("{}", event="memory.created")
            await self.end_stream.wait()
        self.handled.append("events ended")
        return response


def on_fake_clock(test: Callable[[App, GuardedServer, ConnectionGuard], Awaitable[None]],
                  limits: ConnectionLimits = LIMITS) -> None:
    """Run `test` against a guarded server of an `App`, on a `FakeClockLoop`."""
    async def scenario() -> None:
        app = App()
        guard = ConnectionGuard(limits)
        runner = GuardedRunner(app.web_app, guard, access_log=None)
        await runner.setup()
        assert isinstance(runner.server, GuardedServer)
        try:
            await test(app, runner.server, guard)
        finally:  # whatever the test left open: a handler still running would hold up cleanup
            app.end_stream.set()
            for connection in runner.server.connections:
                connection.force_close()
            await settle()
            await runner.cleanup()

    loop = FakeClockLoop()
    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()


@pytest.mark.parametrize("head", [b"", b"GET /health HTTP/1.1\r\nHost: worker\r\nX-Slow: a"])
def test_a_request_head_not_in_by_the_header_timeout_is_answered_408_and_closed(head: bytes):
    async def test(app: App, server: GuardedServer, guard: ConnectionGuard) -> None:
        before = counts()
        client = Client(server)
        await client.send(head)
        await advance(9.0)
        await client.send(b"b" if head else b"")  # one more slow byte does not extend it
        await advance(0.9)
        assert not client.transport.closed and guard.open == 1
        await advance(0.2)
        assert client.transport.closed and client.answer.startswith(b"HTTP/1.1 408 ")
        assert guard.open == 0 and moved(before, header=1)

    on_fake_clock(test)


def test_a_head_in_time_is_answered_and_its_connection_kept():
    async def test(app: App, server: GuardedServer, guard: ConnectionGuard) -> None:
        before = counts()
        client = Client(server)
        await client.send(HEALTH[:10])
        await advance(9.9)
        await client.send(HEALTH[10:])
        assert client.answer.startswith(b"HTTP/1.1 200 ")
        await advance(60.0)  # idle, under the keep-alive timeout
        assert not client.transport.closed and moved(before)

    on_fake_clock(test)


def test_an_idle_kept_alive_connection_is_closed_after_the_keepalive_timeout():
    async def test(app: App, server: GuardedServer, guard: ConnectionGuard) -> None:
        before = counts()
        client = Client(server)
        await client.send(HEALTH)
        assert client.answer.startswith(b"HTTP/1.1 200 ")
        await advance(74.0)
        assert not client.transport.closed
        await advance(2.0)
        assert client.transport.closed and guard.open == 0
        assert moved(before, idle=1)

    on_fake_clock(test)


def test_the_next_request_on_a_kept_alive_connection_has_the_header_timeout():
    async def test(app: App, server: GuardedServer, guard: ConnectionGuard) -> None:
        before = counts()
        client = Client(server)
        await client.send(HEALTH)
        await advance(50.0)
        await client.send(b"GET /health HTTP/1.1\r\n")
        await advance(10.1)  # 60 s after the answer: the head's deadline, not the idle one
        assert client.transport.closed and client.answer.count(b"HTTP/1.1 ") == 2
        assert b"HTTP/1.1 408 " in client.answer and moved(before, header=1)

    on_fake_clock(test)


def test_pipelined_requests_are_each_answered():
    async def test(app: App, server: GuardedServer, guard: ConnectionGuard) -> None:
        client = Client(server)
        await client.send(HEALTH * 3)
        assert client.answer.count(b"HTTP/1.1 200 ") == 3
        await advance(60.0)
        assert not client.transport.closed

    on_fake_clock(test)


def test_a_body_not_in_by_the_body_timeout_closes_the_connection_and_logs_no_error(caplog):
    async def test(app: App, server: GuardedServer, guard: ConnectionGuard) -> None:
        before = counts()
        slow, quick = Client(server), Client(server)
        head = b"POST /echo HTTP/1.1\r\nHost: worker\r\nContent-Length: 100\r\n\r\n"
        await slow.send(head + b"x" * 10)
        await quick.send(head + b"x" * 10)
        await advance(29.0)
        await quick.send(b"x" * 90)
        assert quick.answer.startswith(b"HTTP/1.1 200 ") and b'"bytes": 100' in quick.answer
        assert not slow.transport.closed
        await advance(1.1)
        assert slow.transport.closed and slow.answer == b"" and guard.open == 1
        assert app.handled == ["echo 408"] and moved(before, body=1)

    with caplog.at_level(logging.DEBUG, logger="aiohttp"):
        on_fake_clock(test)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_connection_over_the_cap_is_answered_503_and_closed_at_once():
    async def test(app: App, server: GuardedServer, guard: ConnectionGuard) -> None:
        before = counts()
        held = [Client(server) for _ in range(LIMITS.max_connections)]
        over = Client(server)
        await settle()
        assert over.transport.closed and over.answer == connections.REFUSED
        assert over.answer.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in over.answer
        assert guard.open == LIMITS.max_connections and moved(before, refused=1)
        await over.send(HEALTH)  # nothing is read from a refused connection
        assert over.answer == connections.REFUSED
        held[0].transport.close()
        await settle()
        again = Client(server)
        await again.send(HEALTH)
        assert not again.transport.closed and again.answer.startswith(b"HTTP/1.1 200 ")

    on_fake_clock(test)


def test_an_event_stream_outlives_every_timeout_and_counts_toward_the_cap():
    async def test(app: App, server: GuardedServer, guard: ConnectionGuard) -> None:
        before = counts()
        stream = Client(server)
        await stream.send(b"GET /events HTTP/1.1\r\nHost: worker\r\nAccept: text/event-stream\r\n\r\n")
        assert stream.answer.startswith(b"HTTP/1.1 200 ") and b"event: memory.created" in stream.answer
        for _ in range(40):  # 200 s: past the header, body and keep-alive timeouts
            await advance(5.0)
        assert not stream.transport.closed and stream.answer.count(b": ping") >= 30
        assert guard.open == 1 and moved(before)
        app.end_stream.set()
        await settle()
        assert app.handled == ["events ended"] and not stream.transport.closed
        await advance(76.0)  # answered: now idle like any kept-alive connection
        assert stream.transport.closed and moved(before, idle=1)

    on_fake_clock(test)


def test_a_next_head_begun_while_a_stream_runs_has_its_deadline_from_the_streams_end():
    async def test(app: App, server: GuardedServer, guard: ConnectionGuard) -> None:
        before = counts()
        client = Client(server)
        await client.send(b"GET /events HTTP/1.1\r\nHost: worker\r\n\r\n")
        await client.send(b"GET /health HTTP/1.1\r\n")  # pipelined, while the stream runs
        await advance(100.0)
        assert not client.transport.closed and moved(before)
        app.end_stream.set()
        await settle()
        await advance(9.9)
        assert not client.transport.closed
        await advance(0.2)
        assert client.transport.closed and client.answer.endswith(connections.HEADER_TIMED_OUT)
        assert moved(before, header=1)

    on_fake_clock(test)


def test_the_cap_is_a_share_of_the_open_file_limit_unless_set():
    api = Settings().api
    assert connections.max_connections(api, 1024) == 256
    assert connections.max_connections(api, 20000) == AUTO_MAX
    assert connections.max_connections(api, None) in range(16, AUTO_MAX + 1)
    assert connections.max_connections(api, 40) == 16
    assert connections.max_connections(Settings(web_max_connections=300).api, 1024) == 300


def test_event_streams_get_at_most_three_quarters_of_the_cap():
    assert connections.max_event_streams(Settings().api, 1024) == 192  # SSE_MAX_STREAMS 1000 lowered
    assert connections.max_event_streams(Settings().api, 20000) == 1000
    api = Settings(web_max_connections=100, sse_max_streams=1000, sse_max_streams_per_user=3).api
    assert connections.max_event_streams(api) == 75
    assert StreamLimits.of(api) == StreamLimits(total=75, per_user=3)


def test_the_limits_are_settings():
    limits = ConnectionLimits.of(Settings(web_max_connections=9, web_header_timeout_seconds=2,
                                          web_body_timeout_seconds=3, web_keepalive_seconds=4).api)
    assert limits == ConnectionLimits(9, 2.0, 3.0, 4.0)
    assert ConnectionLimits.of(Settings().api).header_timeout == 10.0


def test_a_fresh_scrape_has_every_close_reason_at_zero_and_the_refusals():
    from streams.observability import metrics

    exposition = metrics.render().decode()
    for reason in ("header_timeout", "body_timeout", "idle_timeout"):
        assert f'memstream_http_connections_closed_total{{reason="{reason}"}}' in exposition
    assert "memstream_http_connections_refused_total " in exposition
    assert "memstream_http_connections_open " in exposition


def test_the_worker_serves_through_the_guarded_runner():
    from streams.app.factory import create_faust_app

    settings = Settings(web_max_connections=7)
    faust_app = create_faust_app(settings)
    worker = SimpleNamespace(faust=faust_app, settings=settings)  # what install reads of the app
    guard = connections.install(worker)  # type: ignore[arg-type]  # a stand-in MemstreamApp
    runner = faust_app.web._runner  # type: ignore[attr-defined]  # Faust's aiohttp driver's runner
    assert isinstance(runner, GuardedRunner) and runner.guard is guard
    assert guard.limits.max_connections == 7
    assert REGISTRY.get_sample_value("memstream_http_connections_max") == 7


# --- through real sockets ---------------------------------------------------------------------


async def serving(limits: ConnectionLimits) -> tuple[GuardedRunner, int]:
    runner = GuardedRunner(App().web_app, ConnectionGuard(limits), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started


async def until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as closed)."""
    got = b""
    try:
        while chunk := await asyncio.wait_for(reader.read(65536), GUARD_S):
            got += chunk
    except ConnectionResetError:
        pass
    return got


async def test_through_sockets_a_slow_head_is_closed_and_the_cap_refuses():
    runner, port = await serving(ConnectionLimits(max_connections=2, header_timeout=0.2,
                                                  body_timeout=30.0, keepalive_timeout=75.0))
    try:
        slow = await asyncio.open_connection("127.0.0.1", port)
        slow[1].write(b"GET /health HTTP/1.1\r\nHost: worker\r\n")
        assert (await until_closed(slow[0])).startswith(b"HTTP/1.1 408 ")
        slow[1].close()
    finally:
        await runner.cleanup()

    runner, port = await serving(ConnectionLimits(max_connections=2, header_timeout=60.0,
                                                  body_timeout=60.0, keepalive_timeout=75.0))
    try:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        over = await asyncio.open_connection("127.0.0.1", port)
        assert await until_closed(over[0]) == connections.REFUSED  # accepted in turn: the third
        over[1].close()
        for _, writer in held:
            writer.close()
        deadline = asyncio.get_running_loop().time() + GUARD_S
        while runner.guard.open:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(HEALTH.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        assert (await until_closed(reader)).startswith(b"HTTP/1.1 200 ")
        writer.close()
    finally:
        await runner.cleanup()

