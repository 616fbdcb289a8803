"""Forwarding a user's request to the worker that owns the user (streams/api/routing.py)."""
from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import aiohttp
from yarl import URL

from streams.api.routing import route_to_owner
from streams.tools.broker import free_port


class FakeView:
    """Just what `route_to_owner` reads of a Faust view: the router's owner of a key, this
    worker's URL, the app's HTTP client, and `json`."""

    def __init__(self, owner: URL, client: aiohttp.ClientSession) -> None:
        self.app = SimpleNamespace(router=SimpleNamespace(key_store=lambda table, key: owner),
                                   conf=SimpleNamespace(canonical_url=URL("http://127.0.0.1:1")),
                                   http_client=client)

    def json(self, value: Any, status: int = 200) -> tuple[int, Any]:
        return status, value


class FakeRequest:
    def __init__(self) -> None:
        self.match_info = {"user_id": "ana"}
        self.headers: dict[str, str] = {}
        self.method = "GET"
        self.url = URL("http://127.0.0.1:1/v1/users/ana/export")

    async def read(self) -> bytes:
        return b""


@route_to_owner()
async def answered_here(view: FakeView, request: FakeRequest) -> tuple[int, Any]:
    return 200, {"here": True}


def test_a_forward_to_an_owner_that_has_left_is_answered_503_to_retry():
    """The owner stopped and the group has not rebalanced yet: nothing listens at its address.
    The client is told to retry (503), not that the server failed (500)."""
    gone = URL(f"http://127.0.0.1:{free_port()}")

    async def scenario() -> tuple[int, Any]:
        async with aiohttp.ClientSession() as client:
            return await answered_here(FakeView(gone, client), FakeRequest())

    status, body = asyncio.run(scenario())
    assert status == 503
    assert "retry" in json.dumps(body)


def test_this_worker_answers_its_own_users():
    async def scenario() -> tuple[int, Any]:
        async with aiohttp.ClientSession() as client:
            return await answered_here(FakeView(URL("http://127.0.0.1:1"), client), FakeRequest())

    assert asyncio.run(scenario()) == (200, {"here": True})
