"""Every HTTP route of a running worker under hostile requests (hypothesis).

The routes are enumerated from the worker's app (`registered_routes`: Faust's own views too), so
a new route is fuzzed without a change here. What a route takes (query parameters, body model)
comes from `streams.api.openapi` when the route is described there; a route that is not gets
generic parameters and JSON. Each request has drawn path parameters (the fixture user's real
ids, or hostile text: marker, unicode edge cases, invalid percent-encodings, 600 characters),
a query string, headers (Idempotency-Key, Last-Event-ID, Content-Type, forwarding, garbage
Authorization) and a body (near-valid, arbitrary JSON, random bytes), and is sent with an admin
key, an agent key, a key for another user, an invalid key or none.

Properties of every answer:
- no 5xx but a 503 that says to retry; never a 500;
- every error answer is JSON with an "error" field and a stable "code" (the admin page's files
  aside);
- auth: without a valid key 401 on every path but the public ones; an agent key on an admin
  route 403; a key limited to one user on another user's route 403; an admin key never 401/403;
and at the end the worker process is alive, /health answers 200, and its log shows no
unhandled exception.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from yarl import URL

from streams.api import openapi
from streams.api.auth import is_public
from streams.api.registry_models import EditBody, TopicBody
from tests.fuzzing import (
    MARKER,
    edge_text,
    fuzz_settings,
    hostile_bytes,
    hostile_times,
    json_values,
    marked,
    marked_ids,
)
from tests.integration.conftest import (
    ADMIN_KEY,
    PLANNER_KEY,
    SCOPED_KEY,
    SCOPED_USER,
    Worker,
    call,
    make_turn,
    produce,
    registered_routes,
    unique_user,
    wait_processed,
)
from tests.unit.fuzz.records import edit_bodies, query_bodies, topic_bodies
from topics.query import QueryRequest

pytestmark = pytest.mark.integration

# x 32 routes today: ~500 requests. A deeper hunt: FUZZ_ROUTE_EXAMPLES=200 ./dev test <this file>
EXAMPLES_PER_ROUTE = int(os.environ.get("FUZZ_ROUTE_EXAMPLES", "16"))
KEYS: dict[str, str | None] = {"admin": ADMIN_KEY, "agent": PLANNER_KEY, "scoped": SCOPED_KEY,
                               "invalid": "msk_not-a-valid-key", "none": None}
BODIES: dict[type[BaseModel], st.SearchStrategy[dict[str, Any]]] = {
    QueryRequest: query_bodies,
    EditBody: edit_bodies,
    TopicBody: topic_bodies,
}
# Beside the parameters the OpenAPI names: what other routes read, and Faust's views.
GENERIC_PARAMS = ["wait", "q", "limit", "offset", "category", "format", "key", "partition"]
# `wait=1` makes a write wait up to COMMAND_WAIT_MAX_SECONDS for its command, as it should; a
# fuzzer asking it of commands that never apply would spend its time waiting, so waits are short.
WAITS = st.sampled_from(["", "0", "false", "0.01", "-1", "nan", "inf", "1e9", "abc", "²", MARKER])
BAD_NUMBERS = st.sampled_from(["-1", "1e3", "²", "9" * 5000, "nan", "", " 1", "0x10", "١٢"])
TEXTS = st.one_of(marked(), edge_text, hostile_times, st.integers().map(str), BAD_NUMBERS)
HEADER_VALUES = (st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
                 | st.just(MARKER) | st.just("x" * 4000))
PERCENT_GARBAGE = st.sampled_from(["%FF", "%ED%A0%80", "%C0%AF", "%00", "%2F", "%2e%2e", "%",
                                   "%zz", "%25", "a%0Ab", "%E2%80%AE"])
GARBAGE_AUTH = st.sampled_from([(), (("Authorization", "Bearer"),),
                                (("Authorization", "Basic Zm9vOmJhcg=="),),
                                (("Authorization", "Bearer " + MARKER),), (("X-API-Key", ""),)])
ANY_OBJECT = st.dictionaries(marked(), json_values, max_size=3)
HUGE_BODY = b"{" * 10 + MARKER.encode() * 100_000  # 1.5 MB, above aiohttp's default limit
MUTATIONS = st.lists(st.sampled_from(["path", "query", "query", "headers", "key", "body", "body"]),
                     min_size=1, max_size=3, unique=True)
ERROR_LINES = re.compile(r"Error handling request|Unhandled exception|Traceback \(most recent")


@dataclass(frozen=True)
class Known:
    """Real ids of the fixture user, so requests also get past 'no such memory'."""

    user_id: str
    memory_ids: tuple[str, ...]
    topic: str


@dataclass(frozen=True)
class Request:
    method: str
    template: str
    path: str  # percent-encoded, as sent
    params: tuple[tuple[str, str], ...]
    key_name: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    user_id: str | None  # the drawn user_id path parameter (decoded), if the route has one


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes
    retry_after: str | None


def _operation(method: str, template: str) -> openapi.Operation | None:
    return next((op for op in openapi.OPERATIONS
                 if op.method.upper() == method and op.path == template), None)


def _real_values(name: str, known: Known) -> list[str]:
    return {"user_id": [known.user_id], "memory_id": list(known.memory_ids), "topic": [known.topic],
            "filename": ["admin.js", "admin.css"], "name": ["memories", "users", "applied"],
            "key": [known.user_id]}.get(name, [MARKER])


hostile_segments = st.one_of(
    st.one_of(marked(), marked_ids, edge_text, st.text(max_size=20), hostile_times, st.just(SCOPED_USER))
    .map(lambda value: quote(value, safe="", errors="surrogatepass")),
    PERCENT_GARBAGE,
)
"""A path parameter, percent-encoded as sent (the encodings themselves broken at times)."""


def _query_value(param: openapi.Param) -> st.SearchStrategy[str]:
    """Values for a documented query parameter; a number's are mostly broken numbers."""
    return BAD_NUMBERS if param.type in ("integer", "number") else TEXTS


def _body(model: type[BaseModel] | None) -> st.SearchStrategy[bytes]:
    valid = BODIES.get(model, ANY_OBJECT)
    return hostile_bytes(valid) | st.just(HUGE_BODY) | st.none()


@st.composite
def requests(draw: st.DrawFn, method: str, template: str, known: Known) -> Request:
    """A request that would be valid (the fixture user's real ids, an admin key, a valid body)
    with one to three things broken: a path parameter, the query string, the headers, the key,
    the body. Near-valid requests get past the first check into the code behind it."""
    operation = _operation(method, template)
    documented = operation.params if operation else ()
    names = re.findall(r"\{(\w+)\}", template)
    segments = {name: quote(draw(st.sampled_from(_real_values(name, known))), safe="") for name in names}
    body_model = operation.body if operation else None
    body = json.dumps(draw(BODIES[body_model])).encode() if body_model in BODIES else None
    pairs: list[tuple[str, str]] = []
    headers: list[tuple[str, str]] = []
    key_name = "admin"
    for mutation in draw(MUTATIONS):
        if mutation == "path" and names:
            segments[draw(st.sampled_from(names))] = draw(hostile_segments)
        elif mutation == "query":
            query_params = [p for p in documented if p.where == "query"]
            if query_params:
                param = draw(st.sampled_from(query_params))
                pairs.append((param.name, draw(_query_value(param))))
            pairs += draw(st.lists(st.tuples(st.sampled_from(GENERIC_PARAMS) | marked(), TEXTS),
                                   max_size=2))
        elif mutation == "headers":
            headers += [(p.name, draw(HEADER_VALUES)) for p in documented
                        if p.where == "header" and draw(st.booleans())]
            headers += draw(st.lists(st.tuples(
                st.sampled_from(["Last-Event-ID", "Content-Type", "Accept", "X-Memstream-Forwarded",
                                 "X-Forwarded-For", MARKER]), HEADER_VALUES), max_size=2))
        elif mutation == "key":
            key_name = draw(st.sampled_from(["agent", "scoped", "invalid", "none"]))
            if key_name == "none":
                headers += draw(GARBAGE_AUTH)
        elif mutation == "body":
            body = draw(_body(body_model))
    pairs = [(name, draw(WAITS) if name == "wait" else value) for name, value in pairs]
    path = re.sub(r"\{(\w+)\}", lambda m: segments[m.group(1)], template)
    user_id = None
    if "user_id" in segments:
        user_id = URL.build(path="/" + segments["user_id"], encoded=True).path[1:]
    return Request(method, template, path, tuple(pairs), key_name, tuple(headers), body, user_id)


async def send(base: str, request: Request) -> Answer:
    """Send one request as drawn (no client-side cleaning) and read its answer; an event stream
    is not read past its headers."""
    query = "&".join(f"{quote(k, safe='', errors='surrogatepass')}="
                     f"{quote(v, safe='', errors='surrogatepass')}" for k, v in request.params)
    url = URL(base + request.path + (f"?{query}" if query else ""), encoded=True)
    headers = dict(request.headers)
    key = KEYS[request.key_name]
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    timeout = aiohttp.ClientTimeout(total=120)  # a hang guard, not a speed requirement
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.request(request.method, url, headers=headers, data=request.body,
                                   skip_auto_headers=["Content-Type"]) as response:
            streaming = response.content_type == "text/event-stream"
            body = b"" if streaming else await response.read()
            return Answer(response.status, response.content_type, body,
                          response.headers.get("Retry-After"))


def _before_the_app(answer: Answer) -> bool:
    """aiohttp's HTTP parser refuses a request line over 8190 bytes with a plain-text 400
    before any middleware sees the request; that answer is not the API's to shape."""
    return answer.status == 400 and answer.body.startswith(b"Got more than 8190 bytes")


def problems_of(request: Request, answer: Answer) -> list[str]:
    """What is wrong with one answer (nothing, for a correct one)."""
    found = []
    path = URL(request.path, encoded=True).path
    static = request.template in ("/admin", "/admin/static/{filename}")
    body: Any = None
    if answer.content_type == "application/json":
        try:
            body = json.loads(answer.body)
        except ValueError:
            found.append("invalid JSON body")
    if answer.status >= 500:
        retry = answer.status == 503 and isinstance(body, dict) and "retry" in str(body.get("error"))
        if not retry:
            found.append(f"{answer.status} that is not a 503 asking to retry")
    if (answer.status >= 400 and not static and not _before_the_app(answer)
            and not (isinstance(body, dict) and "error" in body and isinstance(body.get("code"), str))):
        found.append(f"error answer {answer.status} without a JSON 'error' field and 'code'")
    if answer.content_type == "text/event-stream" and answer.status != 200:
        found.append(f"event stream with status {answer.status}")
    if request.key_name in ("none", "invalid") and not is_public(path) and answer.status != 401:
        found.append(f"{answer.status} without a valid key")
    user_route = request.template.startswith("/v1/users/{user_id}")
    admin_route = not user_route and not is_public(path) and path not in ("/openapi.json", "/metrics")
    if request.key_name in ("agent", "scoped") and admin_route and answer.status != 403:
        found.append(f"{answer.status} for an agent key on an admin route")
    if (request.key_name == "scoped" and user_route and request.user_id != SCOPED_USER
            and answer.status != 403):
        found.append(f"{answer.status} for a key of {SCOPED_USER} on another user's route")
    # An admin key may be refused only what no key may do: query as an agent without an
    # allowlist (403 on /query), or a directory of the static files.
    if request.key_name == "admin" and (answer.status == 401 or answer.status == 403 and not (
            static or request.template.endswith("/query"))):
        found.append(f"{answer.status} for the admin key")
    return found


@pytest.fixture(scope="module")
def known(worker: Worker) -> Known:
    """A user with memories and a blocked topic, so requests reach past the lookups."""
    user = unique_user("fuzz")
    turns = [make_turn(user, "1", f"I adopted a dog named Luna, {MARKER}."),
             make_turn(user, "2", "My goal is to run a marathon in October.")]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    status, listing = asyncio.run(call(worker.api_url, "GET", f"/v1/users/{user}/memories"))
    assert status == 200 and listing["items"], listing
    status, _ = asyncio.run(call(worker.api_url, "POST", f"/v1/users/{user}/blocked-topics?wait=1",
                                 {"topic": "knitting"}))
    assert status == 200, status
    return Known(user, tuple(m["id"] for m in listing["items"]), "knitting")


def _destructive_last(route: tuple[str, str]) -> tuple[bool, int]:
    """Deletes last, the user's purge the very last: the routes before them still find the
    fixture user's memories."""
    method, template = route
    return method == "DELETE", -len(template) if method == "DELETE" else 0


def _log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def new_log_errors(worker: Worker, since: int) -> list[str]:
    """Lines of the worker's log written after `since` that report an unhandled exception."""
    with open(worker.log_path, "rb") as log:
        log.seek(since)
        return [line for line in log.read().decode("utf-8", "replace").splitlines()
                if ERROR_LINES.search(line)]


def answer_to(worker: Worker, request: Request) -> Answer:
    try:
        return asyncio.run(send(worker.api_url, request))
    except aiohttp.ClientError as exc:
        raise AssertionError(f"no answer ({exc!r}) to {str(request)[:1200]}") from None


def assert_worker_healthy(worker: Worker) -> None:
    assert worker.proc is not None and worker.proc.poll() is None, "the worker exited"
    status, health = asyncio.run(call(worker.api_url, "GET", "/health", key=""))
    assert status == 200 and health["status"] == "ok", health


def test_every_route_answers_hostile_requests_safely(worker: Worker, known: Known):
    log_start = _log_size(worker.log_path)
    failures: list[str] = []
    sent = 0

    for method, template in sorted(registered_routes(), key=_destructive_last):
        @fuzz_settings(EXAMPLES_PER_ROUTE, shrink=False)
        @given(request=requests(method, template, known))
        def fuzz_route(request: Request) -> None:
            nonlocal sent
            sent += 1
            answer = answer_to(worker, request)
            problems = problems_of(request, answer)
            assert not problems, (f"{problems}; answer {answer.body[:300]!r}; "
                                  f"request {str(request)[:1200]}")

        try:
            fuzz_route()
        except AssertionError as exc:  # one failure per route; the others still run
            failures.append(f"{method} {template}: {str(exc).splitlines()[0]}")

    assert_worker_healthy(worker)
    assert not failures, "\n".join(failures)
    assert not new_log_errors(worker, log_start)
    assert sent >= 5 * len(registered_routes()), sent


def _regressions(user: str) -> list[tuple[Request, int]]:
    """Requests the fuzzing found answered wrongly, with the status each gets now."""
    def request(method: str, template: str, path: str, params: tuple[tuple[str, str], ...] = (),
                body: bytes | None = None) -> Request:
        user_id = path.split("/")[3] if template.startswith("/v1/users/") else None
        return Request(method, template, path, params, "admin", (), body, user_id)

    memories = "/v1/users/{user_id}/memories"
    return [
        # A user id longer than 200 characters, or with a space, reached Command(): a 500.
        (request("DELETE", "/v1/users/{user_id}", "/v1/users/" + "u" * 201), 400),
        (request("POST", "/v1/users/{user_id}/blocked-topics", "/v1/users/a%20b/blocked-topics",
                 body=b'{"topic": "x"}'), 400),
        # A NUL in the user id went raw into the Location header: the connection was dropped.
        # Ids now refuse control characters.
        (request("DELETE", "/v1/users/{user_id}", "/v1/users/%00"), 400),
        # aiohttp's static server stat()ed a 300-character name: OSError, a 500.
        (request("GET", "/admin/static/{filename}", "/admin/static/" + "a" * 300), 404),
        # Faust's views on a table that does not exist: a 500 (KeyError), a 503 "try again".
        (request("GET", "/router/{name}/", "/router/nosuch/"), 404),
        (request("GET", "/table/{name}/{key}/", "/table/nosuch/k/"), 404),
        # "²" is a digit to str.isdigit, not to int(); int() refuses 5000 digits: 500s.
        (request("GET", memories, f"/v1/users/{user}/memories", (("offset", "²"),)), 400),
        (request("GET", memories, f"/v1/users/{user}/memories", (("limit", "9" * 5000),)), 400),
        # No route matched (an empty user id), a body over 1 MB: aiohttp's plain-text answers.
        (request("GET", "/v1/users/{user_id}/query", "/v1/users//query"), 404),
        (request("POST", "/v1/users/{user_id}/query", f"/v1/users/{user}/query", body=HUGE_BODY), 413),
        # A request line over 8190 bytes: logged at ERROR with the line (the query's text).
        (request("GET", "/v1/users/{user_id}/query", f"/v1/users/{user}/query",
                 (("q", MARKER * 600),)), 400),
    ]


def test_the_requests_that_failed_once(worker: Worker, known: Known):
    log_start = _log_size(worker.log_path)
    for request, status in _regressions(known.user_id):
        answer = answer_to(worker, request)
        assert (answer.status, problems_of(request, answer)) == (status, []), (
            request.path[:80], answer.body[:300])
    assert_worker_healthy(worker)
    assert not new_log_errors(worker, log_start)
    with open(worker.log_path, "rb") as log:
        assert MARKER.encode() not in log.read()[log_start:], "the worker logged a request's text"
