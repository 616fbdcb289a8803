"""The OpenAPI is the contract: requests made from `/openapi.json` (schemathesis) are sent to a
running worker over HTTP, and every answer is checked against the document.

- Generated requests: for each of the document's operations, `CONTRACT_EXAMPLES` requests with
  valid data and as many with invalid data (schemathesis' positive and negative modes).
- Real requests: the fixture user's real ids and valid bodies, for the answers random ids never
  get (a query's items, a memory, its history, applied writes, the user's event stream with its
  `memory.*` events and a `reset`, Faust's table views, the admin page's files).

All are sent with an admin key, and every answer must pass the checks:
- not_a_server_error: no 5xx but a declared one (503: retry);
- status_code_conformance: the status is declared for the operation;
- content_type_conformance: the Content-Type is one declared for that status;
- response_schema_conformance: the body (each event, for an event stream) matches its schema.
Deterministic (derandomized: the same requests each run); a deeper hunt:
CONTRACT_EXAMPLES=100 ./dev test tests/integration/test_openapi_contract.py
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from hypothesis import given
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from streams.api import openapi
from tests.fuzzing import fuzz_settings
from tests.integration.conftest import (
    ADMIN_KEY,
    COMMAND_WAIT_S,
    Worker,
    call,
    make_turn,
    produce,
    unique_user,
    wait_processed,
)

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("CONTRACT_EXAMPLES", "10"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
HEADERS = {"Authorization": f"Bearer {ADMIN_KEY}"}
STREAM_S = 0.25
"""How long a generated request's event stream is read (it never ends by itself): its backlog,
if any, comes at once. The real requests' streams are read for REAL_STREAM_S."""
REAL_STREAM_S = 3.0
SHORT_WAIT = "0.05"
"""A generated `wait` that would hold a request (up to COMMAND_WAIT_MAX_SECONDS, 120 s on a
test worker, for commands that never apply) is sent as this: the same answers, without the time."""


@dataclass(frozen=True)
class Known:
    """A user with memories and events."""

    user_id: str
    memory_id: str


def short_wait(value: Any) -> Any:
    """`wait` as generated, or SHORT_WAIT for a valid wait longer than that."""
    if value in ("1", "true"):
        return SHORT_WAIT
    try:
        seconds = float(str(value))
    except ValueError:
        return value
    return SHORT_WAIT if float(SHORT_WAIT) < seconds <= COMMAND_WAIT_S else value


FRAMING_HEADERS = {"content-length", "transfer-encoding", "host", "connection"}
"""Headers that frame the HTTP message itself. A generated value for one (negative mode may add
any header: Hypothesis draws names and values from the string constants of the modules loaded,
so which ones depends on the tests run before; it once sent `content-length: pending_change`)
is refused by aiohttp's parser, in text/plain, before any route: HTTP's rules, not the API's."""


def send(base: str, case: schemathesis.Case, stream_s: float = STREAM_S) -> schemathesis.Response:
    """Send `case` with the admin key, without generated framing headers (`FRAMING_HEADERS`);
    raise what the checks found wrong with the answer. An event stream is read for `stream_s`
    seconds."""
    for name in [name for name in case.headers or {} if name.lower() in FRAMING_HEADERS]:
        del case.headers[name]
    stream = case.operation.path.endswith("/events")
    return case.call_and_validate(base_url=base, headers=HEADERS, checks=CHECKS,
                                  timeout=stream_s if stream else COMMAND_WAIT_S)


def failure_of(exc: BaseException) -> str:
    """The report of a failed check, without its traceback noise."""
    return str(exc).split("\nReproduce with:")[0].strip()


@pytest.fixture(scope="module")
def schema() -> Any:
    return schemathesis.openapi.from_dict(openapi.build_spec())


@pytest.fixture(scope="module")
def known(worker: Worker) -> Known:
    user = unique_user("contract")
    turns = [make_turn(user, "1", "I adopted a dog named Luna."),
             make_turn(user, "2", "My goal is to run a marathon in October.")]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    status, listing = asyncio.run(call(worker.api_url, "GET", f"/v1/users/{user}/memories"))
    assert status == 200 and listing["items"], listing
    return Known(user, listing["items"][0]["id"])


def test_generated_requests_get_declared_answers(worker: Worker, schema: Any):
    failures: list[str] = []
    sent = 0
    operations = [result.ok() for result in schema.get_all_operations()]
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @fuzz_settings(EXAMPLES, shrink=False)
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case: schemathesis.Case) -> None:
                nonlocal sent
                sent += 1
                if case.query and "wait" in case.query:
                    case.query["wait"] = short_wait(case.query["wait"])
                send(worker.api_url, case)

            try:
                check()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE  # nothing of the operation can be invalid
            except (Exception, FailureGroup) as exc:  # one failure per operation and mode
                failures.append(f"{operation.label} ({mode.value}): {failure_of(exc)}")
    assert not failures, "\n\n".join(failures)
    assert len(operations) == len(openapi.OPERATIONS) and sent >= EXAMPLES * len(operations), sent


def real_requests(known: Known) -> list[tuple[str, str, dict[str, Any], int, Any]]:
    """(method, path template, case fields, status expected, text (or texts) the answer has)."""
    user = {"user_id": known.user_id}
    memory = {**user, "memory_id": known.memory_id}
    applied = {"query": {"wait": "1"}}
    return [
        ("GET", "/v1/users/{user_id}/query", {"path_parameters": user, "query": {
            "q": "dog", "agent": "supervisor", "return": "full"}}, 200, "Luna"),
        ("POST", "/v1/users/{user_id}/query", {"path_parameters": user, "body": {
            "agent": "supervisor", "query": "marathon", "since_rev": 0, "thread_id": "t1"}},
         200, "marathon"),
        ("GET", "/v1/users/{user_id}/memories", {"path_parameters": user}, 200, known.memory_id),
        ("GET", "/v1/users/{user_id}/memories/{memory_id}", {"path_parameters": memory}, 200,
         known.memory_id),
        ("POST", "/v1/users/{user_id}/memories/{memory_id}/pin", {
            "path_parameters": memory, "headers": {"Idempotency-Key": "pin-1"}, **applied},
         200, '"applied"'),
        ("GET", "/v1/users/{user_id}/commands/{command_id}", {
            "path_parameters": {**user, "command_id": "pin-1"}}, 200, '"applied"'),
        ("PATCH", "/v1/users/{user_id}/memories/{memory_id}", {
            "path_parameters": memory, "body": {"text": "The user adopted a dog, Luna."},
            **applied}, 200, '"applied"'),
        ("GET", "/v1/users/{user_id}/memories/{memory_id}/history", {"path_parameters": memory},
         200, "UPDATE"),
        ("POST", "/v1/users/{user_id}/blocked-topics", {"path_parameters": user,
                                                         "body": {"topic": "knitting"}, **applied},
         200, '"applied"'),
        ("GET", "/v1/users/{user_id}/blocked-topics", {"path_parameters": user}, 200, "knitting"),
        ("GET", "/v1/users/{user_id}/export", {"path_parameters": user}, 200, "history"),
        ("GET", "/v1/users/{user_id}/proposals", {"path_parameters": user}, 200, "items"),
        ("DELETE", "/v1/users/{user_id}/blocked-topics/{topic}", {
            "path_parameters": {**user, "topic": "knitting"}, **applied}, 200, '"applied"'),
        # an id no longer buffered: a reset, then the buffered events
        ("GET", "/v1/users/{user_id}/events", {"path_parameters": user, "headers": {
            "Last-Event-ID": "no-longer-buffered"}}, 200,
         ("event: reset\r\n", "event: memory.created\r\n", "event: memory.updated\r\n")),
        ("GET", "/router/{name}/", {"path_parameters": {"name": "users"}}, 200, "users"),
        ("GET", "/router/{name}/{key}/", {"path_parameters": {"name": "users",
                                                              "key": known.user_id}}, 200, "http"),
        ("GET", "/table/{name}/", {"path_parameters": {"name": "users"}}, 200, "users"),
        # a sealed table's entry as stored: the binary envelope, which names its user in clear
        ("GET", "/table/{name}/{key}/", {"path_parameters": {"name": "users",
                                                             "key": known.user_id}}, 200,
         known.user_id),
        ("GET", "/admin/static/{filename}", {"path_parameters": {"filename": "admin.js"}}, 200,
         "memstream"),
        ("GET", "/admin/static/{filename}", {"path_parameters": {"filename": "admin.css"}}, 200,
         "body"),
        ("DELETE", "/v1/users/{user_id}/memories", {"path_parameters": user, **applied}, 200,
         '"applied"'),
        ("DELETE", "/v1/users/{user_id}", {"path_parameters": user, **applied}, 200, '"applied"'),
    ]


def test_real_requests_get_declared_answers(worker: Worker, schema: Any, known: Known):
    failures: list[str] = []
    for method, path, fields, status, texts in real_requests(known):
        case = schema[path][method].Case(**fields)
        try:
            response = send(worker.api_url, case, REAL_STREAM_S)
        except FailureGroup as exc:
            failures.append(f"{method} {path}: {failure_of(exc)}")
            continue
        answer = response.content.decode()
        found = all(text in answer for text in ((texts,) if isinstance(texts, str) else texts))
        assert (response.status_code, found) == (status, True), (method, path, answer[:500])
    assert not failures, "\n\n".join(failures)
