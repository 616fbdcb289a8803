"""Issue 48, finding 11: the tools' Kafka clients (replay's producer, watch's consumer, the
bench's, the LangGraph store's producer) check the connection within
KAFKA_CONNECT_TIMEOUT_SECONDS before they start, from the process's settings, and fail with a
`BrokerConnectionError`, instead of a wait of aiokafka's retries and its KafkaConnectionError.

The broker is a listener that never answers (a TLS client on a plaintext listener waits so).
No duration is asserted; GUARD_S only guards a hang."""
from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, asynccontextmanager

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from langgraph.store.base import PutOp

from streams.client import ClientError
from streams.kafka.security import BrokerConnectionError
from streams.settings import get_settings
from streams.tools.client import TurnProducer, make_consumer, make_producer, read_topic
from streams.client.langgraph_store import MemstreamStore

GUARD_S = 120
"""A guard against a hang (aiokafka's own retries wait 40 s and more), never a measure."""


@pytest.fixture
def silent() -> Iterator[str]:
    """host:port of a listener that never accepts nor answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


@pytest.fixture
def tls_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's settings say TLS (the system's CAs) and a check of half a second."""
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("KAFKA_CONNECT_TIMEOUT_SECONDS", "0.5")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@asynccontextmanager
async def empty_worker() -> AsyncIterator[str]:
    """The URL of a worker's API that holds no memory (a list is empty, a memory is not found):
    a put of a key there sends a turn to Kafka."""
    async def listing(request: web.Request) -> web.Response:
        return web.json_response({"user_id": request.match_info["user"], "items": [], "total": 0})

    async def not_found(request: web.Request) -> web.Response:
        return web.json_response({"error": "not found"}, status=404)

    app = web.Application()
    app.router.add_get("/v1/users/{user}/memories", listing)
    app.router.add_route("*", "/{tail:.*}", not_found)
    server = TestServer(app)
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


def no_answer(bootstrap: str) -> str:
    return f"no answer from {bootstrap} within 0.5s \\(KAFKA_CONNECT_TIMEOUT_SECONDS\\).*SSL"


async def test_replays_producer_fails_within_the_settings_timeout(silent, tls_settings) -> None:
    async def replay() -> None:
        async with TurnProducer(silent):  # what `memstream replay` and the bench produce with
            raise AssertionError("started against a broker that never answers")

    with pytest.raises(BrokerConnectionError, match=no_answer(silent)):
        await asyncio.wait_for(replay(), GUARD_S)


async def test_watchs_consumer_fails_within_the_settings_timeout(silent, tls_settings) -> None:
    async with aclosing(read_topic(silent, "memory.events")) as records:
        with pytest.raises(BrokerConnectionError, match=no_answer(silent)):
            await asyncio.wait_for(records.__anext__(), GUARD_S)


@pytest.mark.parametrize("make", [lambda b: make_producer(b, True),
                                  lambda b: make_consumer(b, "memory.progress", enable_auto_commit=False)],
                         ids=["producer", "consumer"])
async def test_the_tools_clients_fail_within_the_settings_timeout(silent, tls_settings, make) -> None:
    client = make(silent)
    with pytest.raises(BrokerConnectionError, match=no_answer(silent)):
        await asyncio.wait_for(client.start(), GUARD_S)


async def test_a_timeout_given_by_hand_wins(silent, tls_settings) -> None:
    producer = make_producer(silent, connect_timeout=0.25)
    with pytest.raises(BrokerConnectionError, match=f"no answer from {silent} within 0.25s"):
        await asyncio.wait_for(producer.start(), GUARD_S)


async def test_the_benchs_own_consumers_fail_within_the_settings_timeout(silent, tls_settings) -> None:
    from benchmarks.bench import topic_partitions
    from benchmarks.bench_scale import broker_end_offsets

    for call in (topic_partitions(silent, "chat.turns"), broker_end_offsets(silent)):
        with pytest.raises(BrokerConnectionError, match=no_answer(silent)):
            await asyncio.wait_for(call, GUARD_S)


async def test_the_langgraph_stores_put_fails_within_the_settings_timeout(silent, tls_settings) -> None:
    """A put of a new key sends a turn through the store's producer: it fails named, at once."""
    async with empty_worker() as api:
        store = MemstreamStore(api, "key", "planner", broker=silent, timeout_s=GUARD_S)
        put = PutOp(("memories", "ana"), "goal", {"text": "Ana runs a marathon in May."})
        with pytest.raises(ClientError, match=no_answer(silent)) as failed:  # the client's, named
            await asyncio.wait_for(store.abatch([put]), GUARD_S)
        assert isinstance(failed.value.__cause__, BrokerConnectionError)
        store.close()
