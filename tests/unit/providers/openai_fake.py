"""A local fake of an OpenAI-compatible chat completions server, for the real `AsyncOpenAI` client.

Real HTTP on 127.0.0.1 (a free port): the SDK's request building, error mapping and retries are
exercised. Replies are the provider tests' `Reply` (text, HTTP error, hang); besides them the fake
can answer a body that is no chat completion (`garbage`), and refuse the `json_schema` form as
llama.cpp's server does (`refuse_json_schema`, a status) while answering `json_object`.
"""
from __future__ import annotations

import asyncio
from collections import deque
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from tests.unit.providers.conftest import Reply, serve_route

USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}


@dataclass
class FakeChatAPI:
    """`POST /v1/chat/completions`. Replies are served in order; the last one repeats. A `hang`
    reply sets `hanging` and answers only once `release` is set (at teardown at the latest)."""

    base_url: str = ""
    replies: deque[Reply] = field(default_factory=lambda: deque([Reply.json({})]))
    requests: list[dict[str, Any]] = field(default_factory=list)
    refuse_json_schema: int | None = None
    garbage: str | None = None
    hanging: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def script(self, *replies: Reply) -> None:
        self.replies = deque(replies)

    def forms(self) -> list[str | None]:
        """The `response_format.type` of each request received (None: not sent)."""
        return [(r["body"].get("response_format") or {}).get("type") for r in self.requests]

    def _next(self) -> Reply:
        return self.replies.popleft() if len(self.replies) > 1 else self.replies[0]

    @staticmethod
    def _error(status: int) -> web.Response:
        body = {"error": {"message": "scripted failure", "type": "server_error", "code": None}}
        # retry-after-ms keeps the SDK's backoff short (it honours the header).
        return web.json_response(body, status=status, headers={"retry-after-ms": "20"})

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"headers": {k.lower(): v for k, v in request.headers.items()}, "body": body})
        form = (body.get("response_format") or {}).get("type")
        if self.refuse_json_schema is not None and form == "json_schema":
            return self._error(self.refuse_json_schema)
        if self.garbage is not None:
            return web.Response(text=self.garbage, content_type="text/html")
        reply = self._next()
        if reply.hang:
            self.hanging.set()
            await self.release.wait()
        if reply.status != 200:
            return self._error(reply.status)
        finish = "length" if reply.stop_reason == "max_tokens" else "stop"
        return web.json_response({
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
            "model": body.get("model", ""), "usage": USAGE,
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": reply.text}}],
        })


@pytest.fixture
async def fake_chat() -> AsyncIterator[FakeChatAPI]:
    fake = FakeChatAPI()
    runner, url = await serve_route("/v1/chat/completions", fake.handle)
    fake.base_url = f"{url}/v1"
    yield fake
    fake.release.set()
    await runner.cleanup()


@contextmanager
def fake_chat_in_thread() -> Iterator[FakeChatAPI]:
    """The fake on an event loop of its own thread, for callers that run their own loops
    (`asyncio.run`) or another process (a worker)."""
    fake = FakeChatAPI()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    runner: list[web.AppRunner] = []

    async def start() -> None:
        served, url = await serve_route("/v1/chat/completions", fake.handle)
        runner.append(served)
        fake.base_url = f"{url}/v1"
        started.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()))
    thread.start()
    started.wait(60)
    try:
        yield fake
    finally:
        loop.call_soon_threadsafe(fake.release.set)
        asyncio.run_coroutine_threadsafe(runner[0].cleanup(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(60)
