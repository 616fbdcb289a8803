"""Fixtures of the provider tests: a local fake of the Anthropic Messages API, turns, settings.

The fake is a real HTTP server on 127.0.0.1 (random port) spoken to by the real `AsyncAnthropic`
client, so the SDK's own request building, error mapping and retries are exercised.

No test here depends on the machine's speed: a test of the model's answer (or of an error's
mapping) runs with `AMPLE_BUDGETS`, which no machine runs out; a test of the budget makes the
provider block until released and ends the budget itself (`ManualDeadline`), or lets a real
budget run out on a provider that cannot answer before it does.
"""
from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web

from streams.guarded.llm import GuardedLLM
from streams.observability.metrics import REGISTRY
from streams.providers.llm import AnthropicProvider
from streams.settings import Settings
from topics.turns import Role, Turn

TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
HANG_GUARD_S = 120
"""Fails a test that hangs; never what a test asserts (each call it bounds takes milliseconds)."""
AMPLE_BUDGETS: dict[str, int] = {"trigger_budget_ms": 600_000, "llm_extract_budget_ms": 600_000,
                                 "llm_same_fact_budget_ms": 600_000}
"""LLM budgets far beyond anything a local fake needs, for tests of what the model answers (or
how an error maps): the budget is not what they check, and a busy machine must not run it out."""
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
    """`POST /v1/messages`. Replies are served in order; the last one repeats.

    A `hang` reply sets `hanging` and answers only once `release` is set (at teardown, unless
    the test sets it): it can never beat a budget, however slow the machine.
    """

    base_url: str = ""
    replies: deque[Reply] = field(default_factory=lambda: deque([Reply.json({})]))
    requests: list[dict[str, Any]] = field(default_factory=list)
    hanging: asyncio.Event = field(default_factory=asyncio.Event)
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
            self.hanging.set()
            await self.release.wait()
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


async def serve_route(path: str, handler: Callable[[web.Request], Awaitable[web.Response]]
                      ) -> tuple[web.AppRunner, str]:
    """`handler` answering `POST path` on a free local port: the runner and `http://host:port`."""
    app = web.Application()
    app.router.add_post(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeMessagesAPI]:
    fake = FakeMessagesAPI()
    runner, fake.base_url = await serve_route("/v1/messages", fake.handle)
    yield fake
    fake.release.set()
    await runner.cleanup()


@pytest.fixture(autouse=True)
def _no_real_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never reach a real endpoint: no real keys, fake AWS credentials."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "LLM_PROVIDER", "MEMORY_TINY_LLM_MODEL_ID",
                 "AWS_PROFILE", "AWS_SESSION_TOKEN", "OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL",
                 "LLM_MODE", "OPENAI_RESPONSE_FORMAT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


class ManualDeadline:
    """A `guarded.Deadline` on the test's clock: the budget runs out when the test calls
    `expire()`, never before. Like `asyncio.wait_for` it then cancels the call and raises
    `TimeoutError`. `budgets` records the budget (seconds) each call was given."""

    def __init__(self) -> None:
        self.budgets: list[float] = []
        self._expired = asyncio.Event()

    def expire(self) -> None:
        self._expired.set()

    async def __call__(self, call: Awaitable[str], budget_s: float) -> str:
        self.budgets.append(budget_s)
        answer = asyncio.ensure_future(call)
        expired = asyncio.ensure_future(self._expired.wait())
        try:
            await asyncio.wait({answer, expired}, return_when=asyncio.FIRST_COMPLETED)
            if answer.done():
                return answer.result()
            raise TimeoutError
        finally:
            expired.cancel()
            if not answer.done():
                answer.cancel()
                await asyncio.gather(answer, return_exceptions=True)


@asynccontextmanager
async def guarded_over(fake_api: FakeMessagesAPI, **overrides: Any) -> AsyncIterator[GuardedLLM]:
    """A GuardedLLM over the real AsyncAnthropic client of `fake_api` (no retries), with
    `AMPLE_BUDGETS` and `overrides` as its settings; closed on leaving."""
    s = settings(anthropic_api_key="test-key", anthropic_base_url=fake_api.base_url,
                 **{**AMPLE_BUDGETS, **overrides})
    provider = AnthropicProvider.build(api_key="test-key", model=s.llm.anthropic_model,
                                       base_url=fake_api.base_url, max_retries=0)
    llm = GuardedLLM(provider, s)
    try:
        yield llm
    finally:
        await llm.aclose()


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
