"""Every answer of the worker's HTTP server carries the browser security headers: the admin
page, its files, JSON answers, errors aiohttp makes itself, and streamed answers (SSE)."""
from __future__ import annotations

import re
from types import SimpleNamespace

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from aiohttp_sse import sse_response

from streams.api import hardening
from streams.api.web import ADMIN_DIR


async def admin_page(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(ADMIN_DIR / "index.html")


async def json_answer(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def events(request: web.Request) -> web.StreamResponse:
    async with sse_response(request) as response:
        await response.send("{}", event="memory.created")
    return response


def worker_app() -> web.Application:
    """An aiohttp app with the hardening a worker's web server gets (`hardening.install`)."""
    web_app = web.Application()
    hardening.install(SimpleNamespace(faust=SimpleNamespace(web=SimpleNamespace(web_app=web_app))))
    web_app.router.add_get("/admin", admin_page)
    web_app.router.add_get("/v1/users/ana/owner", json_answer)
    web_app.router.add_get("/v1/users/ana/events", events)
    return web_app


async def test_every_answer_carries_the_security_headers():
    async with TestClient(TestServer(worker_app())) as client:
        for path, status in [("/admin", 200), ("/v1/users/ana/owner", 200),
                             ("/v1/users/ana/events", 200), ("/no/such/route", 404)]:
            answer = await client.get(path)
            await answer.read()
            assert answer.status == status, path
            policy = answer.headers.get("Content-Security-Policy", "")
            assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy, path
            assert "'unsafe-inline'" not in policy
            assert answer.headers.get("X-Content-Type-Options") == "nosniff", path
            assert answer.headers.get("X-Frame-Options") == "DENY", path
            assert answer.headers.get("Referrer-Policy") == "no-referrer", path


def test_the_admin_page_needs_nothing_the_policy_forbids():
    """No inline script or style, no handler attributes, nothing from another origin."""
    page = (ADMIN_DIR / "index.html").read_text()
    assert "<style" not in page and not re.search(r"\s(style|on[a-z]+)\s*=", page)
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S)
    assert scripts and all(attrs.strip().startswith('src="/admin/static/') and not body.strip()
                           for attrs, body in scripts)
    assert "http://" not in page and "https://" not in page
