"""One scope check, everywhere: every route of `/openapi.json`, walked with an agent key allowed
one category, shows nothing of another category's memories (their words, their ids) nor of
another user — and command ids are namespaced per principal, and bound to their write.

The walk is made from the served OpenAPI document, so a route added there is walked too (one
with a path parameter or a body schema this module has no sample of fails the test, naming it).
The worker is this module's own: its categories YAML gives agent `solo` the allowlist [Goals].
"""
from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator
from urllib.parse import quote

import aiohttp
import pytest
import yaml

from streams.api import auth
from streams.read.categories import DEFAULT_PATH
from streams.app.topic_admin import create_topics
from streams.tools.broker import EmbeddedBroker
from streams.app.topology import ALL_TOPICS
from tests.integration.conftest import (
    ADMIN_KEY,
    NO_LIFECYCLE,
    PARTITIONS,
    REQUEST_GUARD_S,
    Worker,
    auth_headers,
    call,
    make_turn,
    produce,
    response_to,
    unique_user,
    wait_processed,
)

pytestmark = pytest.mark.integration

ALICE, BOB, CAROL = unique_user("alice"), unique_user("bob"), unique_user("carol")
SOLO_KEY = auth.new_key()  # agent "solo": Goals only, for ALICE and CAROL
SUPERVISOR_KEY = auth.new_key()  # agent "supervisor": every category, for ALICE
SOLO_CATEGORY = "Goals"
ALICE_TURNS = [
    ("1", "I adopted a dog named Luna last year.", "2024-05-01"),
    ("2", "I play the saxophone every Sunday.", "2024-05-02"),
    ("3", "My goal is to play the saxophone in a jazz band.", "2024-05-03"),  # linked to 2
    ("4", "My goal is to run a marathon in October.", "2024-05-04"),
    ("5", "I live in Lisbon.", "2024-05-05"),
    ("6", "I take cello lessons on Tuesdays.", "2024-05-06"),
    ("7", "Forget that I take cello lessons.", "2024-05-07"),  # chat command t1:7:forget
    ("8", "My friend says I live in Berlin now.", "2024-07-01"),  # a consent proposal
]
BOB_TURNS = [("1", "My goal is to learn the piano.", "2024-05-01"),
             ("2", "I have a cat named Mochi.", "2024-05-02")]
CAROL_TURNS = [("1", "My goal is to run a marathon in October.", "2024-05-01")]
OUT_OF_SCOPE_WORDS = ("Luna", "beagle", "Sunday", "Lisbon", "Berlin", "cello", "Tuesday", "cooking",
                      "piano", "Mochi")
"""Words of ALICE's memories outside Goals (as said, edited or blocked) and of BOB's."""


@dataclass
class Scoped:
    """The module's worker and what its users hold (as an admin sees it)."""

    worker: Worker
    alice: list[dict[str, Any]]
    bob: list[dict[str, Any]]
    carol: list[dict[str, Any]]
    proposals: list[dict[str, Any]]
    forbidden: set[str] = field(default_factory=set)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def turns(user: str, speaker: str, said: list[tuple[str, str, str]]) -> list:
    return [make_turn(user, turn_id, text, speaker=speaker, ts=f"{day}T10:00:00+00:00")
            for turn_id, text, day in said]


async def admin(method: str, base: str, path: str, body: Any = None,
                key_name: str | None = None) -> Any:
    headers = {"Idempotency-Key": key_name} if key_name else None
    status, answer = await call(base, method, path, body, ADMIN_KEY, headers)
    assert status == 200, (method, path, status, answer)
    return answer


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory) -> Iterator[EmbeddedBroker]:
    """A broker of this module's own: on the session's, the session worker (another consumer
    group) processes the same turns and its progress records would end `wait_processed` before
    this module's worker has stored them."""
    b = EmbeddedBroker(log_path=tmp_path_factory.mktemp("scopes-broker") / "broker.log").start()
    run(create_topics(b.url, ALL_TOPICS, PARTITIONS))
    yield b
    b.stop()


@pytest.fixture(scope="module")
def scoped(own_broker, tmp_path_factory) -> Iterator[Scoped]:
    broker = own_broker
    workdir = tmp_path_factory.mktemp("scopes")
    categories = yaml.safe_load(DEFAULT_PATH.read_text())
    categories["allowlists"]["solo"] = [SOLO_CATEGORY]
    (workdir / "categories.yaml").write_text(yaml.safe_dump(categories))
    keys = json.dumps([e.model_dump(exclude_none=True) for e in (
        auth.entry_for(ADMIN_KEY, "it-admin", "admin"),
        auth.entry_for(SOLO_KEY, "solo", "agent", [ALICE, CAROL]),
        auth.entry_for(SUPERVISOR_KEY, "supervisor", "agent", [ALICE]))])
    worker = Worker(broker.url, workdir / "data", "memstream-scopes", workdir / "worker.log",
                    env={**NO_LIFECYCLE, "CATEGORIES_PATH": str(workdir / "categories.yaml"),
                         "MEMSTREAM_API_KEYS": keys}).start()
    try:
        sent = (turns(ALICE, "Ana", ALICE_TURNS) + turns(BOB, "Bob", BOB_TURNS)
                + turns(CAROL, "Carol", CAROL_TURNS))
        run(produce(broker.url, sent))
        run(wait_processed(broker.url, sent))
        yield run(setup(worker))
    finally:
        worker.stop()


async def setup(worker: Worker) -> Scoped:
    """Registry changes by the admin (thread "commands"), each under an Idempotency-Key the walk
    reuses with the agent's key; then what each user holds."""
    base = worker.api_url

    async def listed(user: str) -> list[dict[str, Any]]:
        return (await admin("GET", base, f"/v1/users/{user}/memories"))["items"]

    alice = await listed(ALICE)
    luna = next(m for m in alice if "Luna" in m["summary"])
    await admin("PATCH", base, f"/v1/users/{ALICE}/memories/{luna['id']}?wait=1",
                {"text": "Ana adopted a beagle named Luna in 2023."}, "shared-1")
    await admin("POST", base, f"/v1/users/{ALICE}/blocked-topics?wait=1", {"topic": "cooking"},
                "shared-2")
    piano = next(m for m in await listed(BOB) if "piano" in m["summary"])
    await admin("PATCH", base, f"/v1/users/{BOB}/memories/{piano['id']}?wait=1",
                {"text": "Bob wants to learn the piano this year."}, "shared-1")
    state = Scoped(worker, await listed(ALICE), await listed(BOB), await listed(CAROL),
                   (await admin("GET", base, f"/v1/users/{ALICE}/proposals"))["items"])
    assert {m["category"] for m in state.alice} >= {"Personal", SOLO_CATEGORY}, state.alice
    held = [(m["category"], m["state"], m["summary"]) for m in state.alice]
    assert any(state == "soft_deleted" and "cello" in summary for _, state, summary in held), held
    assert any(r for m in state.alice if m["category"] == SOLO_CATEGORY
               for r in m["related_ids"]), "a Goals memory linked to a Personal one"
    # ids too: a Goals memory's links to a Personal one (`related_ids`, `relations`) must not
    # name it in a list, an export, a history or a full query answer
    state.forbidden = {*OUT_OF_SCOPE_WORDS, BOB,
                       *(m["summary"] for m in state.alice if m["category"] != SOLO_CATEGORY),
                       *(m["id"] for m in state.alice if m["category"] != SOLO_CATEGORY),
                       *(p["proposed_summary"] for p in state.proposals),
                       *(m["summary"] for m in state.bob), *(m["id"] for m in state.bob)}
    return state


# --- the walk ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: Any = None

    @property
    def url(self) -> str:
        query = "&".join(f"{k}={quote(v, safe='')}" for k, v in self.params)
        return self.path + (f"?{query}" if query else "")


def samples(state: Scoped) -> dict[str, dict[str, list[Any]]]:
    """Values for the OpenAPI parameters, by where and name; the first is always sent, each
    other one in a call of its own. Path values mix the scoped users' ids with the other
    user's, and ids of other categories and of other principals' commands."""
    memory_ids = [m["id"] for m in state.alice + state.bob + state.carol] + ["m-none"]
    return {
        "path": {
            "user_id": [ALICE, BOB],
            "memory_id": memory_ids,
            "command_id": ["shared-1", "shared-2", "t1:7:forget", "t1:8:consent",
                           f"api/{'0' * 16}/shared-1", "never-sent"],
            "topic": ["cooking", "none"],
            "proposal_id": [p["id"] for p in state.proposals] + ["p-none"],
            "filename": ["admin.js"],
            "name": ["memories", "applied"],
            "key": [state.alice[0]["id"]],
        },
        "query": {
            "q": ["saxophone"], "agent": ["solo"], "top_k": ["20"], "return": ["full"],
            "since_rev": ["0"], "thread_id": ["t1", "commands"], "wait": ["3"],
            "state": ["soft_deleted"], "last_event_id": ["none-such"],
        },
        "header": {"Idempotency-Key": ["shared-1", "solo-own"], "Last-Event-ID": ["none-such"]},
    }


BODIES: dict[str, list[Any]] = {
    "QueryRequest": [{"agent": "solo", "query": "saxophone", "return": "full", "top_k": 20,
                      "since_rev": 0, "thread_id": thread} for thread in ("t1", "commands")],
    "EditBody": [{"text": "Ana is a spy."}],
    "TopicBody": [{"topic": "cooking"}],
}


def walk(spec: dict[str, Any], values: dict[str, dict[str, list[Any]]]) -> Iterable[Call]:
    """A call per operation of `spec` and combination of path values, with every parameter
    this module has a sample for; one more call per further sample value of a parameter."""
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            params = op.get("parameters", [])
            in_path = [p["name"] for p in params if p["in"] == "path"]
            missing = [n for n in in_path if n not in values["path"]]
            assert not missing, f"{method} {path}: no sample value for path parameters {missing}"
            optional = [(p["in"], p["name"]) for p in params
                        if p["in"] in ("query", "header") and p["name"] in values[p["in"]]]
            bodies: list[Any] = [None]
            if "requestBody" in op:
                ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                schema = ref.rsplit("/", 1)[-1]
                assert schema in BODIES, f"{method} {path}: no sample body for {schema}"
                bodies = BODIES[schema]
            choices = [[(where, name, v) for v in values[where][name]] for where, name in optional]
            first = [c[0] for c in choices]
            variants = [first] + [[*first[:i], other, *first[i + 1:]]
                                  for i, c in enumerate(choices) for other in c[1:]]
            for combo in itertools.product(*(values["path"][n] for n in in_path)):
                filled = path
                for name, value in zip(in_path, combo):
                    filled = filled.replace("{" + name + "}", quote(value, safe=""))
                for variant, body in itertools.product(variants, bodies):
                    yield Call(method.upper(), filled,
                               tuple((n, v) for where, n, v in variant if where == "query"),
                               tuple((n, v) for where, n, v in variant if where == "header"), body)


async def answer_of(session: aiohttp.ClientSession, base: str, request: Call) -> tuple[int, str]:
    """(status, body text); an event stream is read for a moment (its backlog), then left."""
    async with response_to(session, request.method, base + request.url, json=request.body,
                           headers=dict(request.headers)) as response:
        if response.content_type != "text/event-stream":
            return response.status, await response.text()
        chunks: list[bytes] = []
        deadline = time.monotonic() + 2.0
        while (left := deadline - time.monotonic()) > 0:
            try:
                chunk = await asyncio.wait_for(response.content.readany(), left)
            except asyncio.TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return response.status, b"".join(chunks).decode()


async def walk_all(state: Scoped, key: str) -> list[tuple[Call, int, str]]:
    base = state.worker.api_url
    async with aiohttp.ClientSession(headers=auth_headers(key),
                                     timeout=aiohttp.ClientTimeout(total=REQUEST_GUARD_S)) as session:
        async with session.get(base + "/openapi.json") as response:
            spec = await response.json()
        calls = sorted(walk(spec, samples(state)), key=lambda c: (c.method != "GET", c.path))
        answers = []
        for request in calls:
            answers.append((request, *await answer_of(session, base, request)))
        # and every read again, after the agent's own writes (their outcomes included)
        for request in (c for c in calls if c.method == "GET"):
            answers.append((request, *await answer_of(session, base, request)))
        return answers


def test_an_admin_sees_what_the_agent_may_not(scoped):
    """The words the walk looks for are there to be found (before the walk's own writes): the
    admin's delta header of the registry's thread shows the Personal edit, a Goals memory's
    related memories the Personal one, and the export the blocked topic."""
    base = scoped.worker.api_url
    body = {"agent": "supervisor", "query": "saxophone", "return": "full", "since_rev": 0,
            "thread_id": "commands", "top_k": 20}
    status, answer = run(call(base, "POST", f"/v1/users/{ALICE}/query", body, ADMIN_KEY))
    assert status == 200 and "beagle" in answer["delta"]["header"], answer["delta"]
    assert any("Sunday" in r["summary"] for item in answer["items"] for r in item["related"])
    status, export = run(call(base, "GET", f"/v1/users/{ALICE}/export", None, ADMIN_KEY))
    assert export["blocked_topics"] == ["cooking"]


def test_every_route_shows_an_agent_key_nothing_outside_its_scope(scoped):
    answers = run(walk_all(scoped, SOLO_KEY))
    leaks: dict[str, set[str]] = {}
    for c, status, text in answers:
        for word in scoped.forbidden:
            if word in text:
                leaks.setdefault(f"{c.method} {c.url} {dict(c.headers)} -> {status}", set()).add(word)
    assert not leaks, "answers showing what the key may not see:\n" + "\n".join(
        f"{where}: {sorted(words)}" for where, words in sorted(leaks.items()))
    errors = [(c.method, c.url, status, text[:200]) for c, status, text in answers if status >= 500]
    assert not errors, errors
    # not vacuous: the walk reached the scoped user's Goals memories, the delta header, the
    # related memories and the event stream
    texts = "\n".join(text for _, _, text in answers)
    assert "marathon" in texts and "jazz band" in texts
    assert "Memory updates since rev 0" in texts
    assert any(c.path.endswith("/events") and "memory.created" in text and "marathon" in text
               for c, _, text in answers)
    paths = {c.path for c, _, _ in answers}
    assert f"/v1/users/{ALICE}/export" in paths and f"/v1/users/{ALICE}/blocked-topics" in paths


def test_a_second_principal_reusing_an_idempotency_key_gets_its_own_command(scoped):
    base = scoped.worker.api_url
    goal = next(m for m in scoped.carol if "marathon" in m["summary"])
    path = f"/v1/users/{CAROL}/memories/{goal['id']}"
    key = {"Idempotency-Key": "dup-1"}
    status, first = run(call(base, "PATCH", path + "?wait=1", {"text": "Carol plans a marathon in May."},
                             ADMIN_KEY, key))
    assert status == 200 and first["commands"][0]["command_id"] == "dup-1", first
    status, body = run(call(base, "GET", f"/v1/users/{CAROL}/commands/dup-1", None, SOLO_KEY))
    assert status == 404, f"the admin's outcome is not the agent's to read: {body}"

    status, second = run(call(base, "PATCH", path + "?wait=1", {"text": "Carol plans a marathon in June."},
                              SOLO_KEY, key))
    assert status == 200 and second["status"] == "applied", second
    assert [e["summary"] for e in second["commands"][0]["events"]] == ["Carol plans a marathon in June."]
    assert run(call(base, "GET", path, None, ADMIN_KEY))[1]["summary"] == "Carol plans a marathon in June."

    status, own = run(call(base, "GET", f"/v1/users/{CAROL}/commands/dup-1", None, SOLO_KEY))
    assert status == 200 and "June" in json.dumps(own) and "May" not in json.dumps(own), own
    status, admins = run(call(base, "GET", f"/v1/users/{CAROL}/commands/dup-1", None, ADMIN_KEY))
    assert status == 200 and "May" in json.dumps(admins) and "June" not in json.dumps(admins)

    # a retry by the same principal still applies once; the same key for another body is a 409
    status, retried = run(call(base, "PATCH", path + "?wait=1", {"text": "Carol plans a marathon in June."},
                               SOLO_KEY, key))
    assert status == 200 and retried["commands"][0]["events"] == second["commands"][0]["events"]
    status, reused = run(call(base, "PATCH", path + "?wait=1", {"text": "Carol plans a marathon in July."},
                              SOLO_KEY, key))
    assert status == 409 and reused["code"] == "idempotency_key_reused", reused
    assert run(call(base, "GET", path, None, ADMIN_KEY))[1]["summary"] == "Carol plans a marathon in June."


def test_consent_is_the_users_answer_an_agent_key_cannot_give(scoped):
    """Even an agent allowed the proposal's category may list it but not answer it."""
    base = scoped.worker.api_url
    assert scoped.proposals, "the user has a pending proposal to answer"
    status, listed = run(call(base, "GET", f"/v1/users/{ALICE}/proposals", None, SUPERVISOR_KEY))
    assert status == 200 and [p["id"] for p in listed["items"]] == [p["id"] for p in scoped.proposals]
    for proposal in scoped.proposals:
        for decision in ("accept", "reject"):
            status, body = run(call(base, "POST", f"/v1/users/{ALICE}/proposals/{proposal['id']}/"
                                    f"{decision}?wait=1", None, SUPERVISOR_KEY))
            assert status == 403, (decision, status, body)
    assert run(call(base, "GET", f"/v1/users/{ALICE}/proposals", None, ADMIN_KEY))[1]["items"]
