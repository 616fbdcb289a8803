"""Every error answer is JSON `{"error": ..., "code": ...}` with a stable code and no server path,
and every number of a request is bounded: a number past its bound is a 400 before anything runs,
never a plain-text 500 after the query ran (a revision past 64 bits once was)."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from streams.api import hardening
from streams.api.query import parse_body, parse_params
from streams.api.views import coded_errors, error
from streams.read.categories import CategoryPolicy, load_policy
from streams.read.errors import CategoriesConfigError, InvalidQuery
from topics.query import REVISION_MAX

HUGE = "99999999999999999999999"


@pytest.mark.parametrize("field, value", [("since_rev", HUGE), ("top_k", HUGE),
                                          ("budget_tokens", HUGE), ("since_rev", str(REVISION_MAX + 1))])
def test_every_number_of_a_query_is_bounded(field, value):
    body = f'{{"agent": "planner", "query": "plans", "thread_id": "t1", "{field}": {value}}}'
    with pytest.raises(InvalidQuery, match=field):
        parse_body(body.encode())
    with pytest.raises(InvalidQuery, match=field):
        parse_params({"q": "plans", "agent": "planner", "thread_id": "t1", field: value}, None)
    parse_body(b'{"agent": "a", "query": "q", "thread_id": "t", "since_rev": %d}' % REVISION_MAX)


def test_a_broken_categories_file_is_named_without_its_directory(tmp_path):
    broken = tmp_path / "secret-dir" / "categories.yaml"
    broken.parent.mkdir()
    broken.write_text("categories: [")
    for path in (broken, tmp_path / "missing.yaml"):
        with pytest.raises(CategoriesConfigError) as refused:
            CategoryPolicy.from_path(path)
        assert str(tmp_path) not in str(refused.value) and path.name in str(refused.value)


def categories_handler(path: Path):
    async def handler(request: web.Request) -> web.Response:
        load_policy.cache_clear()
        load_policy(path)  # what `Scope.of` does for a registry or event-stream route
        return web.json_response({})
    return handler


async def fails(request: web.Request) -> web.Response:
    raise RuntimeError("the input was 'Ana has HIV' at /srv/memstream/secret.py")


async def plain_text(request: web.Request) -> web.Response:
    return web.Response(text="Traceback: /srv/memstream/app.py line 3", status=500)


async def uncoded(request: web.Request) -> web.Response:
    return web.json_response({"error": "partition is moving, retry shortly"}, status=503)


async def coded(request: web.Request) -> web.Response:
    return error(409, "this Idempotency-Key was used for another write", "idempotency_key_reused")


def worker_app(broken: Path) -> web.Application:
    """An aiohttp app with the edges a worker's server has (`hardening`, `coded_errors`)."""
    app = web.Application()
    hardening.install(app_namespace(app))
    app.middlewares.insert(0, coded_errors)
    app.router.add_get("/v1/users/ana/memories", categories_handler(broken))
    app.router.add_get("/fails", fails)
    app.router.add_get("/plain", plain_text)
    app.router.add_get("/uncoded", uncoded)
    app.router.add_get("/coded", coded)
    return app


def app_namespace(web_app: web.Application) -> SimpleNamespace:
    """What `hardening.install` asks of a worker's app."""
    return SimpleNamespace(faust=SimpleNamespace(web=SimpleNamespace(web_app=web_app), tables={}))


async def test_every_error_answer_is_json_with_a_code_and_no_server_path(tmp_path):
    broken = tmp_path / "conf" / "categories.yaml"
    broken.parent.mkdir()
    broken.write_text("categories: [")
    expected = {
        "/v1/users/ana/memories": (503, "categories_unavailable"),
        "/fails": (500, "internal_error"),
        "/plain": (500, "internal_error"),
        "/uncoded": (503, "unavailable"),
        "/coded": (409, "idempotency_key_reused"),
        "/no/such/route": (404, "not_found"),
    }
    try:
        async with TestClient(TestServer(worker_app(broken))) as client:
            for path, (status, code) in expected.items():
                answer = await client.get(path)
                text = await answer.text()
                assert answer.status == status, (path, text)
                assert answer.content_type == "application/json", (path, text)
                body = json.loads(text)
                assert set(body) == {"error", "code"} and body["code"] == code, (path, body)
                assert "/srv" not in text and str(tmp_path) not in text and "HIV" not in text, text
            post = await client.post("/fails")
            assert post.status == 405 and (await post.json())["code"] == "method_not_allowed"
    finally:
        load_policy.cache_clear()
