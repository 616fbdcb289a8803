"""API keys over real HTTP: every route but the public ones needs a key, a key acts only for its
users, an agent key sees only its allowlist, and nothing of another user leaks."""
from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import aiohttp
import pytest

from streams.api.auth import is_public
from tests.integration.conftest import (
    ADMIN_KEY,
    PLANNER_KEY,
    REQUEST_GUARD_S,
    SCOPED_KEY,
    SCOPED_USER,
    auth_headers,
    make_turn,
    produce,
    registered_routes,
    response_to,
    unique_user,
    wait_processed,
)

pytestmark = pytest.mark.integration

FILL = {"user_id": "someone", "memory_id": "m-1", "topic": "x", "command_id": "c-1",
        "proposal_id": "p-1", "filename": "admin.js", "name": "memories", "key": "k"}


def fill(path: str, **values: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: {**FILL, **values}[m.group(1)], path)


async def status_of(base: str, method: str, path: str, key: str | None) -> tuple[int, str]:
    headers = auth_headers(key) if key else {}
    async with aiohttp.ClientSession(headers=headers,
                                     timeout=aiohttp.ClientTimeout(total=REQUEST_GUARD_S)) as session:
        body = {"PATCH": {"text": "Ana is a spy."}, "POST": {"topic": "x"}}.get(method)
        async with response_to(session, method, base + path, json=body) as response:
            if response.content_type == "text/event-stream":
                return response.status, ""
            return response.status, await response.text()


def test_route_enumeration_sees_every_kind_of_route():
    routes = registered_routes()
    paths = {p for _, p in routes}
    assert {"/health", "/metrics", "/v1/users/{user_id}/memories", "/v1/users/{user_id}/events",
            "/v1/users/{user_id}/query", "/table/{name}/{key}/"} <= paths, paths


def test_every_route_but_the_public_ones_needs_a_valid_key(worker):
    unauthenticated = []
    for method, template in registered_routes():
        path = fill(template)
        for key in (None, "msk_not-a-key"):
            status, body = asyncio.run(status_of(worker.api_url, method, path, key))
            if is_public(path):
                assert status != 401, (method, path)
            elif status != 401 or "API key" not in body:
                unauthenticated.append((method, path, key, status))
    assert not unauthenticated, f"routes answering without a valid key: {unauthenticated}"
    assert asyncio.run(status_of(worker.api_url, "GET", "/health", None))[0] == 200


def test_agent_keys_cannot_reach_admin_only_routes(worker):
    for path in ("/table/", "/table/memories/", "/router/", "/"):
        status, body = asyncio.run(status_of(worker.api_url, "GET", path, PLANNER_KEY))
        assert status == 403, (path, status, body[:200])
        assert asyncio.run(status_of(worker.api_url, "GET", path, ADMIN_KEY))[0] not in (401, 403)
    assert asyncio.run(status_of(worker.api_url, "GET", "/metrics", PLANNER_KEY))[0] == 200


def test_a_user_scoped_key_cannot_touch_another_user(worker):
    other = unique_user("victim")
    denied = []
    for method, template in registered_routes():
        if not template.startswith("/v1/users/{user_id}"):
            continue
        status, body = asyncio.run(status_of(worker.api_url, method, fill(template, user_id=other),
                                             SCOPED_KEY))
        if status != 403 or set(json.loads(body)) != {"error", "code"}:
            denied.append((method, template, status))
    assert not denied, f"a key for {SCOPED_USER} reached {other}: {denied}"
    status, _ = asyncio.run(status_of(worker.api_url, "GET", f"/v1/users/{SCOPED_USER}/memories",
                                      SCOPED_KEY))
    assert status == 200


@pytest.fixture(scope="module")
def mixed_user(worker) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A user with a Personal memory (outside planner's allowlist) and a Goals one (inside)."""
    user = unique_user("allow")
    turns = [make_turn(user, "1", "I adopted a dog named Luna last year."),
             make_turn(user, "2", "My goal is to run a marathon in October.")]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    status, body = asyncio.run(status_of(worker.api_url, "GET", f"/v1/users/{user}/memories", ADMIN_KEY))
    items = json.loads(body)["items"]
    personal = next(i for i in items if "Luna" in i["summary"])
    goal = next(i for i in items if "marathon" in i["summary"])
    assert personal["category"] == "Personal" and goal["category"] == "Goals", items
    return user, personal, goal


def test_an_agent_key_sees_and_changes_only_its_allowlist(worker, mixed_user):
    user, personal, goal = mixed_user
    base = f"/v1/users/{user}"
    status, body = asyncio.run(status_of(worker.api_url, "GET", base + "/memories", PLANNER_KEY))
    assert status == 200 and {i["id"] for i in json.loads(body)["items"]} == {goal["id"]}
    status, body = asyncio.run(status_of(worker.api_url, "GET", base + "/export", PLANNER_KEY))
    assert [m["id"] for m in json.loads(body)["memories"]] == [goal["id"]]
    for method, suffix in [("GET", ""), ("GET", "/history"), ("PATCH", ""), ("DELETE", ""),
                           ("POST", "/pin"), ("POST", "/restore")]:
        status, body = asyncio.run(status_of(
            worker.api_url, method, f"{base}/memories/{personal['id']}{suffix}", PLANNER_KEY))
        assert status == 404 and "Luna" not in body, (method, suffix, status)
    status, _ = asyncio.run(status_of(worker.api_url, "GET", f"{base}/memories/{goal['id']}", PLANNER_KEY))
    assert status == 200


def test_the_query_route_never_returns_categories_outside_the_keys_allowlist(worker, mixed_user):
    user, personal, _ = mixed_user
    for query in ("?q=dog&agent=planner&top_k=10", "?q=dog&top_k=10"):
        status, body = asyncio.run(status_of(worker.api_url, "GET", f"/v1/users/{user}/query{query}",
                                             PLANNER_KEY))
        assert status in (200, 400, 403), (query, status)
        assert personal["id"] not in body and "Luna" not in body, (query, body[:300])


def test_every_answer_carries_the_browser_security_headers(worker):
    async def headers_of(path: str, key: str | None) -> dict[str, str]:
        async with aiohttp.ClientSession(headers=auth_headers(key) if key else {}) as session:
            async with response_to(session, "GET", worker.api_url + path) as response:
                return dict(response.headers)

    for path, key in [("/admin", None), ("/admin/static/admin.js", None), ("/health", None),
                      ("/openapi.json", PLANNER_KEY), ("/metrics", None)]:
        headers = asyncio.run(headers_of(path, key))
        assert "frame-ancestors 'none'" in headers.get("Content-Security-Policy", ""), path
        assert headers.get("X-Content-Type-Options") == "nosniff", path
        assert headers.get("X-Frame-Options") == "DENY", path
        assert headers.get("Referrer-Policy") == "no-referrer", path
