"""Every error answer of a running worker is JSON with a stable code and no server path, and every
number of a request is bounded: a revision past 64 bits is a 400 before the query runs (it was a
plain-text 500 after), and a categories file that stops parsing makes the registry, the event
stream and the query answer 503 `categories_unavailable`, naming no file, until it is fixed.

The worker and its broker are this module's own: its categories file is broken on purpose."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from streams.read.categories import DEFAULT_PATH
from tests.integration.conftest import (
    PLANNER_KEY,
    REQUEST_GUARD_S,
    Worker,
    a_broker,
    auth_headers,
    call,
    unique_user,
)

pytestmark = pytest.mark.integration
HUGE = "99999999999999999999999"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    yield from a_broker(tmp_path_factory)


@pytest.fixture(scope="module")
def categories(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("conf-secret-dir") / "categories.yaml"
    path.write_text(DEFAULT_PATH.read_text())
    return path


@pytest.fixture(scope="module")
def worker(broker, categories, tmp_path_factory) -> Iterator[Worker]:
    workdir = tmp_path_factory.mktemp("errors")
    w = Worker(broker.url, workdir / "data", "memstream-errors", workdir / "worker.log",
               env={"CATEGORIES_PATH": str(categories)}).start()
    yield w
    w.stop()


def run(coro):
    return asyncio.run(coro)


async def once(base: str, method: str, path: str, body: Any, key: str) -> tuple[int, Any]:
    """(status, JSON body) of one request, a 503 included (`call` asks again while it is one)."""
    async with aiohttp.ClientSession(headers=auth_headers(key),
                                     timeout=aiohttp.ClientTimeout(total=REQUEST_GUARD_S)) as session:
        async with session.request(method, base + path, json=body) as response:
            return response.status, json.loads(await response.text())


def test_a_number_past_its_bound_is_a_json_400_before_the_query_runs(worker):
    user = unique_user("err")
    base = worker.api_url
    status, body = run(call(base, "GET", f"/v1/users/{user}/query?q=plans&thread_id=t1&since_rev={HUGE}"))
    assert status == 400 and body["code"] == "invalid_request" and "since_rev" in body["error"], body
    for field in ("since_rev", "top_k", "budget_tokens"):
        request = {"agent": "planner", "query": "plans", "thread_id": "t1", field: int(HUGE)}
        status, body = run(call(base, "POST", f"/v1/users/{user}/query", request, PLANNER_KEY))
        assert status == 400 and body["code"] == "invalid_request" and field in body["error"], body
    status, body = run(call(base, "GET", f"/v1/users/{user}/memories?limit={HUGE}"))
    assert status == 400 and body["code"] == "invalid_request", body


def test_a_broken_categories_file_is_a_json_503_naming_no_file_until_fixed(worker, categories):
    user = unique_user("err")
    base = worker.api_url
    good = categories.read_text()
    routes = [("GET", f"/v1/users/{user}/memories", None, PLANNER_KEY),
              ("GET", f"/v1/users/{user}/export", None, PLANNER_KEY),
              ("GET", f"/v1/users/{user}/events", None, PLANNER_KEY),
              ("POST", f"/v1/users/{user}/query", {"agent": "planner", "query": "plans"}, PLANNER_KEY)]
    categories.write_text("categories: [\n")  # another size: the worker sees the change
    try:
        for method, path, body, key in routes:
            status, answer = run(once(base, method, path, body, key))
            assert status == 503, (path, status, answer)
            assert answer["code"] == "categories_unavailable" and "retry" in answer["error"], answer
            assert str(categories.parent) not in str(answer) and "yaml" not in str(answer), answer
    finally:
        categories.write_text(good)
    status, listed = run(call(base, "GET", f"/v1/users/{user}/memories", None, PLANNER_KEY))
    assert status == 200 and listed["items"] == [], listed
    log = worker.log_path.read_text()
    assert "categories.yaml" in log and "Traceback" not in log, "the operator is told, once fixed it serves"
