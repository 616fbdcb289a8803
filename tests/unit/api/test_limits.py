"""Rate and size limits of the API (streams/api/limits.py), on an aiohttp app with the worker's
auth and hardening middlewares and a controllable clock: a flooded key gets 429 with
Retry-After, every other key is unaffected, and a refused request did nothing."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from streams.api import auth, hardening, limits
from streams.settings import Settings

FLOODED, OTHER = auth.new_key(), auth.new_key()


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_gives_its_burst_then_one_token_per_interval():
    bucket = limits.TokenBucket(rate=2.0, burst=3, now=0.0)
    assert [bucket.take(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take(0.0) == pytest.approx(0.5)  # one token comes every 1/rate s
    assert bucket.take(0.25) == pytest.approx(0.25)
    assert bucket.take(0.5) == 0.0
    assert bucket.take(100.0) == 0.0 and bucket.tokens == pytest.approx(2.0)  # never past burst


def test_retry_after_is_whole_seconds_and_at_least_one():
    assert [limits.retry_after(s) for s in (0.01, 1.0, 1.2, 7.9)] == ["1", "1", "2", "8"]


def test_a_limiter_refuses_nonsense():
    with pytest.raises(ValueError):
        limits.RateLimiter(0.0, 5)
    with pytest.raises(ValueError):
        limits.RateLimiter(1.0, 0)


def settings(**values: object) -> Settings:
    return Settings(table_store="memory://", **values)  # type: ignore[arg-type]


def api(config: Settings, clock: Clock, applied: list[str]) -> web.Application:
    """The worker's middlewares (auth, JSON errors, limits) over a write route that records
    what it applied, a route that reads its body, and a public route."""
    web_app = web.Application()
    auth.install(web_app, auth.KeySource([auth.entry_for(FLOODED, "a", "admin"),
                                          auth.entry_for(OTHER, "b", "admin")]))
    hardening.install(SimpleNamespace(faust=SimpleNamespace(web=SimpleNamespace(web_app=web_app))))
    limits.install(web_app, config.api, clock)

    async def write(request: web.Request) -> web.Response:
        applied.append((await request.json())["id"])
        return web.json_response({"ok": True})

    async def size(request: web.Request) -> web.Response:
        return web.json_response({"bytes": len(await request.read())})

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    web_app.router.add_post("/v1/users/ana/writes", write)
    web_app.router.add_post("/v1/users/ana/size", size)
    web_app.router.add_get("/health", health)
    return web_app


def headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_a_flooded_key_gets_429_others_are_unaffected_and_nothing_is_half_applied():
    clock, applied = Clock(), []
    config = settings(api_rate_per_second=0.5, api_rate_burst=3)
    async with TestClient(TestServer(api(config, clock, applied))) as client:

        async def send(key: str, write_id: str) -> tuple[str, int, str | None, dict]:
            answer = await client.post("/v1/users/ana/writes", json={"id": write_id},
                                       headers=headers(key))
            return write_id, answer.status, answer.headers.get("Retry-After"), await answer.json()

        flood = await asyncio.gather(*(send(FLOODED, f"f{i}") for i in range(10)))
        others = await asyncio.gather(*(send(OTHER, f"o{i}") for i in range(3)))

        accepted = [w for w, status, _, _ in flood if status == 200]
        refused = [(status, wait, body) for _, status, wait, body in flood if status != 200]
        assert len(accepted) == 3 and len(refused) == 7
        assert all(status == 429 and wait == "2" and "retry" in body["error"]
                   for status, wait, body in refused)
        assert [status for _, status, _, _ in others] == [200, 200, 200]
        # Every accepted write was applied, and none of the refused ones.
        assert sorted(applied) == sorted(accepted + ["o0", "o1", "o2"])

        clock.now += 2.0  # one token back (0.5 a second)
        assert (await send(FLOODED, "later"))[1] == 200
        assert (await send(FLOODED, "too-soon"))[1] == 429
        assert "later" in applied and "too-soon" not in applied

        # Without a valid key a request is a 401, never counted; public routes are not limited.
        for _ in range(5):
            assert (await client.post("/v1/users/ana/writes", json={"id": "x"})).status == 401
            assert (await client.get("/health", headers=headers(FLOODED))).status == 200
        assert "x" not in applied


async def test_no_rate_limit_by_default():
    clock, applied = Clock(), []
    async with TestClient(TestServer(api(settings(), clock, applied))) as client:
        for i in range(50):
            answer = await client.post("/v1/users/ana/writes", json={"id": str(i)},
                                       headers=headers(FLOODED))
            assert answer.status == 200
    assert len(applied) == 50


async def test_the_body_limit_is_a_setting():
    clock = Clock()
    async with TestClient(TestServer(api(settings(api_max_body_bytes=1000), clock, []))) as client:
        url, key = "/v1/users/ana/size", headers(FLOODED)
        assert (await (await client.post(url, data=b"x" * 1000, headers=key)).json()) == {"bytes": 1000}
        declared = await client.post(url, data=b"x" * 1001, headers=key)
        assert declared.status == 413 and "error" in await declared.json()

        async def chunks():  # no Content-Length: refused while it is read
            for _ in range(3):
                yield b"x" * 600

        chunked = await client.post(url, data=chunks(), headers=key)
        assert chunked.status == 413 and "error" in await chunked.json()
        # Without a valid key it is a 401 whatever the size.
        assert (await client.post(url, data=b"x" * 5000)).status == 401

    two_mib = 2 * 1024 * 1024  # past aiohttp's own default of 1 MiB
    async with TestClient(TestServer(api(settings(api_max_body_bytes=two_mib), clock, []))) as client:
        answer = await client.post("/v1/users/ana/size", data=b"x" * (two_mib - 1),
                                   headers=headers(FLOODED))
        assert answer.status == 200 and (await answer.json()) == {"bytes": two_mib - 1}
