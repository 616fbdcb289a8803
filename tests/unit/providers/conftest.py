"""Fixtures of the provider tests: a local fake of the Anthropic Messages API, turns, settings.

The fake is a real HTTP server on 127.0.0.1 (random port) spoken to by the real `AsyncAnthropic`
client, so the SDK's own request building, error mapping and retries are exercised.
"""
from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web

from streams.observability.metrics import REGISTRY
from streams.app.settings import Settings
from topics.turns import Role, Turn

TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
                500: "api_error", 529: "overloaded_error"}


@dataclass(frozen=True)
class Reply:
    """One scripted answer of the fake: model text, an HTTP error status, or a hang."""

    text: str = ""
    status: int = 200
    hang: bool = False
    stop_reason: str = "end_turn"

    @classmethod
    def json(cls, payload: Any) -> Reply:
        return cls(text=json.dumps(payload))

    @classmethod
    def error(cls, status: int) -> Reply:
        return cls(status=status)


@dataclass
class FakeMessagesAPI:
    """`POST /v1/messages`. Replies are served in order; the last one repeats."""

    base_url: str = ""
    replies: deque[Reply] = field(default_factory=lambda: deque([Reply.json({})]))
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def script(self, *replies: Reply) -> None:
        self.replies = deque(replies)

    def _next(self) -> Reply:
        return self.replies.popleft() if len(self.replies) > 1 else self.replies[0]

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"headers": {k.lower(): v for k, v in request.headers.items()}, "body": body})
        reply = self._next()
        if reply.hang:
            try:
                await asyncio.wait_for(self.release.wait(), 30)
            except TimeoutError:
                pass
        if reply.status != 200:
            error = {"type": "error", "error": {"type": _ERROR_TYPES.get(reply.status, "api_error"),
                                                "message": "scripted failure"}}
            # retry-after-ms keeps the SDK's backoff short in tests (it honours the header).
            return web.json_response(error, status=reply.status, headers={"retry-after-ms": "20"})
        return web.json_response({
            "id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant",
            "model": body.get("model", ""), "content": [{"type": "text", "text": reply.text}],
            "stop_reason": reply.stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        })


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeMessagesAPI]:
    fake = FakeMessagesAPI()
    app = web.Application()
    app.router.add_post("/v1/messages", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.base_url = f"http://{host}:{port}"
    yield fake
    fake.release.set()
    await runner.cleanup()


@pytest.fixture(autouse=True)
def _no_real_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never reach a real endpoint: no real keys, fake AWS credentials."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "LLM_PROVIDER", "MEMORY_TINY_LLM_MODEL_ID",
                 "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def settings(**overrides: Any) -> Settings:
    """Settings of a test (explicit values win over the environment)."""
    return Settings(**overrides)


def turn(text: str, *, role: Role = Role.user, speaker: str | None = "Caroline",
         turn_id: str = "3") -> Turn:
    return Turn(user_id="u1", thread_id="t1", turn_id=turn_id, role=role, speaker=speaker,
                text=text, ts=TS)


def sample(name: str, **labels: str) -> float:
    """Current value of a metric sample on the worker registry (0 when not yet created)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def fallbacks(provider: str, task: str, reason: str) -> float:
    return sample("memstream_llm_fallbacks_total", provider=provider, task=task, reason=reason)
