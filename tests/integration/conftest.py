"""Fixtures that start the embedded broker and worker processes over real TCP."""
from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import aiohttp
import pytest
from aiokafka import AIOKafkaConsumer

from streams.api import auth
from streams.tools.stack import Completion, start_worker, wait_ready
from streams.privacy.crypto import decode_key, encode_key, new_key
from streams.tools.unseal import TopicUnsealer
from topics.dlq import DeadLetter
from topics.events_wire import events_of
from streams.tools.broker import EmbeddedBroker, free_port
from streams.app.topic_admin import create_topics
from streams.tools.client import TurnProducer
from streams.app.topology import ALL_TOPICS
from topics.names import MEMORY_EVENTS, MEMORY_PROGRESS
from topics.progress import progress_entries
from topics.turns import Turn
from tests.integration.vector_servers import chroma_url, postgres_url  # noqa: F401 - session fixtures

PARTITIONS = 4
REQUEST_GUARD_S = 120
"""Client-side limit of one HTTP request to a test worker: a guard against a hang, never a measure."""
COMMAND_WAIT_S = 120
"""How long a registry write with `?wait=1` waits for its command on a test worker (production:
10 s). A guard against a hang, never what a test asserts: a busy machine must not turn a 200 into
a 202."""

# The keys every test worker accepts (only their hashes reach the worker, as in production).
ADMIN_KEY = auth.new_key()
PLANNER_KEY = auth.new_key()  # agent "planner": Goals, Budget, Finance, Conversation_Summary
SCOPED_USER = f"scoped-{uuid.uuid4().hex[:8]}"
SCOPED_KEY = auth.new_key()  # agent "supervisor" (every category), only for SCOPED_USER
WORKER_KEYS = json.dumps([e.model_dump(exclude_none=True) for e in (
    auth.entry_for(ADMIN_KEY, "it-admin", "admin"),
    auth.entry_for(PLANNER_KEY, "planner", "agent"),
    auth.entry_for(SCOPED_KEY, "supervisor", "agent", [SCOPED_USER]),
)])


MASTER_KEY = encode_key(new_key())
"""The master key every worker of the test session shares (`streams.tools.unseal` opens with it)."""


def auth_headers(key: str = ADMIN_KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@asynccontextmanager
async def response_to(session: aiohttp.ClientSession, method: str, url: str,
                      **kwargs: Any) -> AsyncIterator[aiohttp.ClientResponse]:
    """The worker's response to a request, asked again while it answers 503 "retry shortly".

    A worker answers 503 while its tables recover or a user's partition moves: in a rebalance,
    which a busy machine causes when it delays a heartbeat past the session timeout. Any client
    retries then; the test's request must not fail for it. REQUEST_GUARD_S guards a hang.
    """
    deadline = time.monotonic() + REQUEST_GUARD_S
    while True:
        async with session.request(method, url, **kwargs) as response:
            if response.status != 503 or time.monotonic() > deadline:
                yield response
                return
            pause = float(response.headers.get("Retry-After", "1"))
        await asyncio.sleep(pause)


async def call(base: str, method: str, path: str, body: Any = None, key: str = ADMIN_KEY,
               headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """(status, body) of one request sent with `key`: the body as JSON, or its text if not JSON."""
    async with aiohttp.ClientSession(headers=auth_headers(key),
                                     timeout=aiohttp.ClientTimeout(total=REQUEST_GUARD_S)) as session:
        async with response_to(session, method, base + path, json=body, headers=headers) as response:
            text = await response.text()
            try:
                return response.status, json.loads(text)
            except ValueError:
                return response.status, text


def registered_routes() -> list[tuple[str, str]]:
    """(method, path template) of every route the worker serves, Faust's own views included."""
    from streams.settings import Settings
    from streams.worker import build_worker

    app = build_worker(Settings(table_store="memory://")).faust
    if not any(r.resource.canonical.startswith("/router") for r in app.web.web_app.router.routes()):
        app.web.blueprints.apply(app.web)  # what the worker does when its web server starts
    routes = set()
    for route in app.web.web_app.router.routes():
        path = route.resource.canonical
        if route.method in ("HEAD", "OPTIONS"):
            continue
        routes.add((route.method, path))
    return sorted(routes)


NO_LIFECYCLE = {"LIFECYCLE_ENABLED": "false"}
"""For the tests whose reference cannot follow the lifecycle, which runs on each partition's
event-time watermark: the in-process reference puts every user on one partition (with users on
several, idle users would age by another watermark than in the worker), and a reference run as
another user of the same worker moves a watermark the second run then starts from."""


@dataclass
class Worker:
    """One `memstream worker` child process."""

    broker_url: str
    data_dir: Path
    app_id: str
    log_path: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    env: dict[str, str] = field(default_factory=dict)
    """More settings of the worker (environment variables)."""

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def launch(self) -> "Worker":
        """Start the process without waiting for it to be ready."""
        self.proc = start_worker(self.broker_url, self.port, self.data_dir, self.app_id, PARTITIONS,
                                 self.log_path, {"MEMSTREAM_API_KEYS": WORKER_KEYS,
                                                 "MEMSTREAM_MASTER_KEY": MASTER_KEY,
                                                 "COMMAND_WAIT_MAX_SECONDS": str(COMMAND_WAIT_S),
                                                 **self.env})
        return self

    def start(self) -> "Worker":
        self.launch()
        try:
            asyncio.run(wait_ready(self.api_url, self.proc, timeout=180))
        except Exception:
            print(self.log_path.read_text()[-5000:])
            raise
        return self

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def a_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """An embedded broker with the topics made, stopped after.

    The session's worker runs the lifecycle on each partition's event-time watermark, so a
    module whose turns move the watermarks far (dated now, or months after the others') would
    age every other test's memories there, and one that needs its own ageing undisturbed would
    be aged by them. Such a module overrides `broker` and `worker` with module-scoped fixtures
    of its own, made by `a_broker` and `a_worker`."""
    b = EmbeddedBroker(log_path=tmp_path_factory.mktemp("broker") / "broker.log").start()
    asyncio.run(create_topics(b.url, ALL_TOPICS, PARTITIONS))
    yield b
    b.stop()


def a_worker(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory,
             app_id: str = "memstream-it", env: dict[str, str] | None = None) -> Iterator[Worker]:
    """A worker with the default settings on `broker` (and the variables of `env`), stopped after."""
    workdir = tmp_path_factory.mktemp("worker")
    w = Worker(broker.url, workdir / "data", app_id, workdir / "worker.log", env=env or {}).start()
    yield w
    w.stop()


def own_stack() -> tuple[Any, Any]:
    """`broker` and `worker` fixtures of a module's own (`a_broker`, `a_worker`), for a module
    to bind under those names: `broker, worker = own_stack()`."""
    @pytest.fixture(scope="module")
    def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
        yield from a_broker(tmp_path_factory)

    @pytest.fixture(scope="module")
    def worker(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
        yield from a_worker(broker, tmp_path_factory)

    return broker, worker


@pytest.fixture(scope="session")
def broker(tmp_path_factory) -> Iterable[EmbeddedBroker]:
    yield from a_broker(tmp_path_factory)


@pytest.fixture(scope="session")
def worker(broker, tmp_path_factory) -> Iterable[Worker]:
    yield from a_worker(broker, tmp_path_factory)


def unique_user(prefix: str = "u") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def make_turn(user: str, turn_id: str, text: str, *, thread: str = "t1", speaker: str = "Ana",
              ts: str = "2024-05-01T10:00:00+00:00") -> Turn:
    return Turn(user_id=user, thread_id=thread, turn_id=turn_id, role="user", speaker=speaker,
                text=text, ts=ts)  # type: ignore[arg-type]


async def produce(broker_url: str, turns: list[Turn]) -> None:
    async with TurnProducer(broker_url) as producer:
        for turn in turns:
            await producer.send_turn(turn)
        await producer.flush()


async def wait_processed(broker_url: str, turns: list[Turn], timeout: float = 300.0,
                         stop_after: int | None = None) -> dict[tuple[str, str, str], list[dict]]:
    """Read `memory.progress` until every turn is complete (or `stop_after` turns are)."""
    wanted = {(t.user_id, t.thread_id, t.turn_id) for t in turns}
    users = {t.user_id for t in turns}
    done: set = set()
    seen: dict[tuple[str, str, str], list[dict]] = {}
    completion = Completion()
    consumer = AIOKafkaConsumer(MEMORY_PROGRESS, bootstrap_servers=broker_url,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    deadline = time.monotonic() + timeout
    try:
        target = stop_after or len(wanted)
        while len(done) < target:
            if time.monotonic() > deadline:
                missing = sorted(wanted - done)[:5]
                raise AssertionError(
                    f"only {len(done)}/{len(wanted)} turns processed in {timeout}s; missing "
                    f"{[(k, seen.get(k, [])) for k in missing]}")
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for p in (p for record in records for p in progress_entries(record.value)):
                    key = (p["user_id"], p["thread_id"], p["turn_id"])
                    if p["user_id"] not in users or key not in wanted:
                        continue
                    seen.setdefault(key, []).append(p)
                    if completion.record(p):
                        done.add(key)
    finally:
        await consumer.stop()
    return seen


async def read_all(broker_url: str, topic: str, match: Any, expected: int, timeout: float = 300.0,
                   done: Any = None) -> list[dict]:
    """Read `topic` from the start until `expected` JSON records satisfy `match` (or, given
    `done`, until `done(records)`); events and dead letters are opened with the session's master
    key (their content is sealed)."""
    unsealer = TopicUnsealer(broker_url, None, decode_key(MASTER_KEY))
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker_url, auto_offset_reset="earliest",
                                enable_auto_commit=False)
    await consumer.start()
    out: list[dict] = []
    deadline = time.monotonic() + timeout
    try:
        while not (done(out) if done else len(out) >= expected):
            if time.monotonic() > deadline:
                raise AssertionError(f"got {len(out)}/{expected} matching records on {topic}")
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for record in records:
                    for value in await _values_of(unsealer, topic, record.value):
                        if match(value):
                            out.append(value)
    finally:
        await consumer.stop()
    return out


async def _values_of(unsealer: TopicUnsealer, topic: str, raw: bytes) -> list[dict]:
    """A record's JSON values, opened: each event of a `memory.events` record, or the record."""
    if topic == MEMORY_EVENTS:
        # an event whose user's key is gone (purged) stays sealed
        return [((await unsealer.open_event(event)) or event).model_dump(mode="json")
                for event in events_of(raw)]
    value = json.loads(raw)
    if topic.endswith(".dlq") and value.get("raw_sealed"):
        value = (await unsealer.open_dead_letter(DeadLetter.model_validate(value))).model_dump(mode="json")
    return [value]


async def query(api_url: str, user: str, text: str, top_k: int = 5) -> list[dict]:
    """The items of a `memory.query` (as `ApiClient.query` asks it)."""
    status, body = await call(api_url, "POST", f"/v1/users/{user}/query",
                              {"agent": "supervisor", "query": text, "top_k": top_k, "return": "full"})
    assert status == 200, body
    return body["items"]


async def memories(api_url: str, user: str) -> list[dict]:
    status, body = await call(api_url, "GET", f"/v1/users/{user}/memories")
    assert status == 200, body
    return body["items"]
