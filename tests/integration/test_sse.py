"""SSE over real HTTP: a user's memory.* events live, resumed with Last-Event-ID, filtered by
the key's allowlist."""
from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, AsyncIterator

import aiohttp
import pytest

from tests.integration.conftest import (
    ADMIN_KEY,
    PLANNER_KEY,
    auth_headers,
    make_turn,
    produce,
    response_to,
    unique_user,
)

pytestmark = pytest.mark.integration
TIMEOUT = 120


class EventStream:
    """Reads SSE messages (`id`, `event`, `data`) from an open response."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> dict[str, Any]:
        message: dict[str, Any] = {}
        async for raw in self.response.content:
            line = raw.decode().rstrip("\r\n")
            if not line:
                if "event" in message or "data" in message:
                    return message
                continue
            if line.startswith(":"):
                continue  # keep-alive comment
            name, _, value = line.partition(":")
            message[name] = value.lstrip(" ")
        raise AssertionError("the stream ended")

    async def next_created(self) -> dict[str, Any]:
        """The next `memory.created` message (a turn's `memory.candidate` comes first)."""
        while (message := await self.next())["event"] != "memory.created":
            pass
        return message


@asynccontextmanager
async def events(base: str, user: str, key: str = ADMIN_KEY,
                 last_event_id: str | None = None) -> AsyncIterator[EventStream]:
    headers = auth_headers(key)
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    timeout = aiohttp.ClientTimeout(total=TIMEOUT)
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
        async with response_to(session, "GET", f"{base}/v1/users/{user}/events") as response:
            assert response.status == 200, await response.text()
            assert response.content_type == "text/event-stream"
            yield EventStream(response)


def test_events_stream_live_and_resume_from_the_last_event_id(worker):
    user = unique_user("sse")

    async def scenario() -> None:
        async with events(worker.api_url, user) as stream:
            await produce(worker.broker_url, [make_turn(user, "1", "I adopted a dog named Luna last year.")])
            first = await stream.next_created()
        data = json.loads(first["data"])
        assert first["id"] == data["event_id"] and data["user_id"] == user and "Luna" in data["summary"]

        # Disconnected: a change happens meanwhile; resuming delivers it, and not the first again.
        await produce(worker.broker_url, [make_turn(user, "2", "My sister Marta lives in Porto.")])
        async with events(worker.api_url, user, last_event_id=first["id"]) as stream:
            resumed = await stream.next()
            assert resumed["id"] != first["id"], "the event before Last-Event-ID is not re-sent"
            if resumed["event"] != "memory.created":
                resumed = await stream.next_created()
        assert "Marta" in json.loads(resumed["data"])["summary"]

        async with events(worker.api_url, user, last_event_id="no-such-event") as stream:
            reset = await stream.next()
            assert reset["event"] == "reset"
            replayed = [(await stream.next_created())["id"], (await stream.next_created())["id"]]
        assert replayed == [first["id"], resumed["id"]], "an unknown id replays the whole buffer"

    asyncio.run(scenario())


def test_an_agent_key_gets_only_events_of_its_allowlist(worker):
    user = unique_user("sse-allow")

    async def scenario() -> dict[str, Any]:
        async with events(worker.api_url, user, key=PLANNER_KEY) as stream:
            # Events of one user keep their order: a Personal event would come first.
            await produce(worker.broker_url, [
                make_turn(user, "1", "I adopted a dog named Luna last year."),
                make_turn(user, "2", "My goal is to run a marathon in October."),
            ])
            return await stream.next_created()

    message = asyncio.run(scenario())
    data = json.loads(message["data"])
    assert data["category"] == "Goals" and "Luna" not in message["data"]


def test_a_users_event_streams_past_the_limit_are_refused_with_429(worker):
    """SSE_MAX_STREAMS_PER_USER (8 by default) streams of one user with one key are served;
    one more is a 429 with Retry-After, and another user is still served (other keys' streams
    of the user: tests/integration/test_stream_keys.py)."""
    user, other = unique_user("sse-limit"), unique_user("sse-limit-other")

    async def scenario() -> None:
        async with AsyncExitStack() as streams:
            for _ in range(8):  # each is subscribed by the time its 200 arrives
                await streams.enter_async_context(events(worker.api_url, user))
            async with aiohttp.ClientSession(headers=auth_headers(ADMIN_KEY)) as session:
                async with session.get(f"{worker.api_url}/v1/users/{user}/events") as refused:
                    assert refused.status == 429, await refused.text()
                    assert "Retry-After" in refused.headers
                    assert "event streams" in (await refused.json())["error"]
            async with events(worker.api_url, other):
                pass

    asyncio.run(scenario())
