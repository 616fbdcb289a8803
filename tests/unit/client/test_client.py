"""memstream's client (streams/client/) against a fake API on a real port: typed answers, named
errors, a 503 asked again, an event stream resumed with Last-Event-ID; the blocking client the
same; the SSE parser and the InitProducerId versions on their own."""
from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from aiohttp_sse import sse_response

from streams.client import (
    ApiUnreachable,
    AsyncMemstreamClient,
    AuthenticationError,
    BulletItem,
    ConfigurationError,
    FullItem,
    InvalidRequest,
    MemoryEvent,
    MemstreamClient,
    NotFound,
    PermissionDenied,
    ProduceError,
    QueryResult,
    RateLimited,
    StreamReset,
    Turn,
    Unavailable,
)
from streams.client.kafka import InitProducerIdRequest
from streams.client.sse import SseParser

KEY = "msk_test"
ITEM = {"id": "m1", "category": "Pets", "type": "semantic", "text": "Ana has a dog named Luna.",
        "tokens": 8, "score": 0.9}
FULL_ITEM = {**ITEM, "summary": "Ana has a dog named Luna.", "rank_score": 0.7, "similarity": 0.6,
             "source_turn_ids": ["t1:1"], "state": "active"}


def answer(mode: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"user_id": "ana", "agent": "supervisor", "return": mode, "items": items,
            "context": "- Ana has a dog named Luna.", "tokens": 8}


def event(n: int) -> dict[str, Any]:
    return {"event_id": f"e{n}", "kind": "created", "user_id": "ana", "thread_id": "t1",
            "memory_id": f"m{n}", "rev": n, "ts": "2024-05-01T10:00:00+00:00",
            "summary": f"fact {n}", "category": "Pets"}


class FakeApi:
    """The routes the client calls, answering as a worker does; it records what it was sent."""

    def __init__(self) -> None:
        self.queries: list[dict[str, Any]] = []
        self.unavailable = 0  # 503s to answer before a query succeeds
        self.stream_requests: list[str | None] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/users/{user}/query", self.query)
        app.router.add_get("/v1/users/{user}/events", self.events)
        return app

    async def query(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            return web.json_response({"error": "missing or invalid API key"}, status=401)
        user = request.match_info["user"]
        body = await request.json()
        self.queries.append({"user": user, **body})
        if user == "other":
            return web.json_response({"error": "this key cannot act for this user"}, status=403)
        if user == "busy":
            return web.json_response({"error": "slow down"}, status=429, headers={"Retry-After": "3"})
        if self.unavailable:
            self.unavailable -= 1
            return web.json_response({"error": "partition is moving, retry shortly"}, status=503,
                                     headers={"Retry-After": "0"})
        if body.get("top_k") == 0:
            return web.json_response({"error": "top_k: must be at least 1"}, status=400)
        full = body["return"] == "full"
        return web.json_response(answer(body["return"], [FULL_ITEM if full else ITEM]))

    async def events(self, request: web.Request) -> web.StreamResponse:
        """First connection: e1, then the stream ends (a partition moved). Later ones: the
        events after Last-Event-ID, or a reset and all of them for an unknown id."""
        last = request.headers.get("Last-Event-ID")
        self.stream_requests.append(last)
        events = [event(1)] if len(self.stream_requests) == 1 else [event(1), event(2), event(3)]
        async with sse_response(request) as response:
            ids = [e["event_id"] for e in events]
            if last is not None and last not in ids:
                await response.send(json.dumps({"last_event_id": last}), event="reset")
                backlog = events
            else:
                backlog = events[ids.index(last) + 1:] if last else events
            for item in backlog:
                await response.send(json.dumps(item), id=item["event_id"], event="memory.created")
        return response


@pytest.fixture
async def api() -> AsyncIterator[tuple[FakeApi, str]]:
    fake = FakeApi()
    server = TestServer(fake.app())
    await server.start_server()
    try:
        yield fake, str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


async def test_a_query_answer_is_typed_by_its_mode(api):
    fake, url = api
    async with AsyncMemstreamClient(api_url=url, api_key=KEY) as client:
        bullets = await client.query("ana", "pets?", top_k=3, categories=["Pets"])
        full = await client.query("ana", "pets?", mode="full", agent="planner")
    assert isinstance(bullets, QueryResult) and bullets.context.startswith("- Ana")
    assert [type(i) for i in bullets.items] == [BulletItem]
    assert [type(i) for i in full.items] == [FullItem]
    assert full.items[0].source_turn_ids == ["t1:1"] and full.items[0].state == "active"
    assert fake.queries[0] == {"user": "ana", "agent": "supervisor", "query": "pets?",
                               "return": "bullets", "top_k": 3, "categories": ["Pets"]}
    assert fake.queries[1]["agent"] == "planner" and "top_k" not in fake.queries[1]


async def test_error_answers_are_named_errors(api):
    fake, url = api
    async with AsyncMemstreamClient(api_url=url, api_key=KEY) as client:
        with pytest.raises(PermissionDenied, match="cannot act for this user"):
            await client.query("other", "x")
        with pytest.raises(InvalidRequest, match="top_k") as invalid:
            await client.query("ana", "x", top_k=0)
        assert invalid.value.status == 400
        with pytest.raises(RateLimited) as limited:
            await client.query("busy", "x")
        assert limited.value.retry_after == 3.0
        fake.unavailable = 2  # asked again (Retry-After: 0), then answered
        assert (await client.query("ana", "x")).items
        fake.unavailable = 5
        with pytest.raises(Unavailable):
            await client.query("ana", "x")
    async with AsyncMemstreamClient(api_url=url, api_key="msk_wrong") as client:
        with pytest.raises(AuthenticationError):
            await client.query("ana", "x")
    async with AsyncMemstreamClient(api_url=url + "/nowhere", api_key=KEY) as client:
        with pytest.raises(NotFound):
            await client.query("ana", "x")
    async with AsyncMemstreamClient(api_key=KEY) as client:
        with pytest.raises(ConfigurationError):
            await client.query("ana", "x")
        with pytest.raises(ConfigurationError):
            await client.send_turn(Turn(user_id="ana", thread_id="t", turn_id="1", role="user",  # type: ignore[arg-type]
                                        text="hi", ts="2024-05-01T10:00:00+00:00"))


async def test_unreachable_services_are_named_errors(api):
    _, url = api
    closed = TestServer(web.Application())
    await closed.start_server()
    gone = str(closed.make_url("")).rstrip("/")
    await closed.close()
    async with AsyncMemstreamClient(broker=gone.removeprefix("http://"), api_url=gone,
                                    api_key=KEY) as client:
        with pytest.raises(ApiUnreachable):
            await client.query("ana", "x")
        with pytest.raises(ProduceError):
            await client.send_turn(Turn(user_id="ana", thread_id="t", turn_id="1", role="user",  # type: ignore[arg-type]
                                        text="hi", ts="2024-05-01T10:00:00+00:00"))


async def test_an_event_stream_that_ends_is_resumed_after_the_last_event(api):
    fake, url = api
    async with AsyncMemstreamClient(api_url=url, api_key=KEY, reconnect_delay=0) as client:
        stream = client.watch("ana")
        got = [await stream.__anext__() for _ in range(3)]
    assert [e.event_id for e in got] == ["e1", "e2", "e3"]
    assert all(isinstance(e, MemoryEvent) for e in got)
    assert fake.stream_requests == [None, "e1"]


async def test_a_replay_starts_with_every_kept_event_and_an_unknown_id_is_a_reset(api):
    fake, url = api
    fake.stream_requests.append("(the first connection is used up)")
    async with AsyncMemstreamClient(api_url=url, api_key=KEY) as client:
        replay = client.watch("ana", replay=True, reconnect=False)
        assert [e.event_id async for e in replay] == ["e1", "e2", "e3"]  # no reset shown
        resumed = client.watch("ana", last_event_id="e-old", reconnect=False)
        got = [e async for e in resumed]
    assert got[0] == StreamReset("e-old") and [e.event_id for e in got[1:]] == ["e1", "e2", "e3"]


@pytest.fixture
def api_in_thread() -> Iterator[tuple[FakeApi, str]]:
    """The fake API on an event loop of its own (a blocking test holds the test's loop)."""
    fake, loop = FakeApi(), asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = TestServer(fake.app(), loop=loop)
    asyncio.run_coroutine_threadsafe(server.start_server(), loop).result()
    try:
        yield fake, str(server.make_url("")).rstrip("/")
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def test_the_blocking_client_does_the_same(api_in_thread):
    fake, url = api_in_thread
    with MemstreamClient(api_url=url, api_key=KEY, reconnect_delay=0) as client:
        assert [type(i) for i in client.query("ana", "pets?", mode="full").items] == [FullItem]
        with pytest.raises(PermissionDenied):
            client.query("other", "x")
        events = client.watch("ana")
        assert [next(events).event_id for _ in range(3)] == ["e1", "e2", "e3"]
        events.close()
    client.close()  # twice is harmless


def test_sse_lines_become_messages():
    parser = SseParser()
    lines = [": ping", "id: e1", "event: memory.created", "data: {\"a\":", "data: 1}", "",
             "", "data:plain", ""]
    messages = [m for m in map(parser.feed, lines) if m is not None]
    assert [(m.event, m.data, m.id) for m in messages] == [
        ("memory.created", "{\"a\":\n1}", "e1"), ("message", "plain", "e1")]


def test_init_producer_id_v3_asks_for_a_new_producer():
    request = InitProducerIdRequest(None, 60000)
    v3 = request.prepare({22: (0, 4)})
    v0 = request.prepare({22: (0, 0)})
    assert (v3.API_VERSION, v3.producer_id, v3.producer_epoch) == (3, -1, -1)
    assert v0.API_VERSION == 0
