"""Issue 48 against a real worker: an open event stream keeps no more right than its key has
now (finding 3), one key cannot take another's event streams (finding 4), and Faust's table
views answer only an admin key for every user (finding 6).

The worker is this module's own, on a broker of its own (as test_scopes.py), with its keys in
API_KEYS_FILE and its allowlists in a categories YAML of this module, both changed by the tests.
Every wait is for an event (a stream's message, its end); the guards only stop a hang."""
from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from streams.api import auth
from streams.app.topic_admin import create_topics
from streams.app.topology import ALL_TOPICS
from streams.read.categories import DEFAULT_PATH
from streams.tools.broker import EmbeddedBroker
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
)

pytestmark = pytest.mark.integration

ANA = unique_user("ana")
NARROW_KEY = auth.new_key()  # agent "narrow": Goals and Personal, then narrowed
REVOKED_KEY = auth.new_key()  # agent "narrow", removed from the file by a test
ONE_USER_KEY = auth.new_key()  # agent "supervisor", for ANA only
ANA_ADMIN_KEY = auth.new_key()  # an admin key limited to ANA
ENTRIES = {
    NARROW_KEY: auth.entry_for(NARROW_KEY, "narrow", "agent"),
    REVOKED_KEY: auth.entry_for(REVOKED_KEY, "narrow", "agent"),
    ONE_USER_KEY: auth.entry_for(ONE_USER_KEY, "supervisor", "agent", [ANA]),
    ANA_ADMIN_KEY: auth.entry_for(ANA_ADMIN_KEY, "ana-ops", "admin", [ANA]),
}
GUARD_S = 180.0


class Files:
    """The worker's key file and categories YAML, each change stamped with a later mtime."""

    def __init__(self, directory: Path) -> None:
        self.keys, self.categories = directory / "keys.json", directory / "categories.yaml"
        self.entries = dict(ENTRIES)
        self.mtime = 1_000_000_000
        self.write_keys()
        self.allow(["Goals", "Personal"])

    def _stamp(self, path: Path) -> None:
        self.mtime += 1_000_000_000
        os.utime(path, ns=(self.mtime, self.mtime))

    def write_keys(self) -> None:
        self.keys.write_text(json.dumps([e.model_dump(exclude_none=True) for e in self.entries.values()]))
        self._stamp(self.keys)

    def allow(self, categories: list[str]) -> None:
        policy = yaml.safe_load(DEFAULT_PATH.read_text())
        policy["allowlists"]["narrow"] = categories
        self.categories.write_text(yaml.safe_dump(policy))
        self._stamp(self.categories)


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[tuple[Worker, Files]]:
    b = EmbeddedBroker(log_path=tmp_path_factory.mktemp("stream-keys-broker") / "broker.log").start()
    try:
        asyncio.run(create_topics(b.url, ALL_TOPICS, PARTITIONS))
        workdir = tmp_path_factory.mktemp("stream-keys")
        files = Files(workdir)
        w = Worker(b.url, workdir / "data", "memstream-stream-keys", workdir / "worker.log",
                   env={**NO_LIFECYCLE, "API_KEYS_FILE": str(files.keys),
                        "CATEGORIES_PATH": str(files.categories),
                        "SSE_MAX_STREAMS_PER_USER": "2"}).start()
        try:
            yield w, files
        finally:
            w.stop()
    finally:
        b.stop()


class Stream:
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> dict[str, Any] | None:
        """The next message; None once the worker ended the stream."""
        return await asyncio.wait_for(self._next(), GUARD_S)

    async def _next(self) -> dict[str, Any] | None:
        message: dict[str, Any] = {}
        async for raw in self.response.content:
            line = raw.decode().rstrip("\r\n")
            if not line:
                if "event" in message:
                    return message
                continue
            if not line.startswith(":"):
                name, _, value = line.partition(":")
                message[name] = value.lstrip(" ")
        return None

    async def next_created(self) -> dict[str, Any] | None:
        while (message := await self.next()) is not None and message["event"] != "memory.created":
            pass
        return message


@asynccontextmanager
async def stream(base: str, user: str, key: str) -> AsyncIterator[Stream]:
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with aiohttp.ClientSession(headers=auth_headers(key), timeout=timeout) as session:
        async with response_to(session, "GET", f"{base}/v1/users/{user}/events") as response:
            assert response.status == 200, await response.text()
            yield Stream(response)


async def status_of(base: str, path: str, key: str) -> tuple[int, str]:
    async with aiohttp.ClientSession(headers=auth_headers(key),
                                     timeout=aiohttp.ClientTimeout(total=REQUEST_GUARD_S)) as session:
        async with response_to(session, "GET", base + path) as response:
            if response.content_type == "text/event-stream":
                return response.status, ""
            return response.status, await response.text()


def test_a_revoked_keys_open_stream_ends_with_no_request_made(stack):
    worker, files = stack
    user = unique_user("revoked")

    async def scenario() -> None:
        async with stream(worker.api_url, user, REVOKED_KEY) as revoked:
            await produce(worker.broker_url, [make_turn(user, "1", "My goal is to run a marathon in October.")])
            assert await revoked.next_created() is not None
            del files.entries[REVOKED_KEY]
            files.write_keys()  # and no request: the worker's watcher alone must notice
            while await revoked.next() is not None:
                pass  # what turn 1 still had to send; then the worker ends the stream
        assert (await status_of(worker.api_url, f"/v1/users/{user}/events", REVOKED_KEY))[0] == 401

    asyncio.run(scenario())


def test_a_narrowed_allowlist_filters_the_next_event(stack):
    worker, files = stack
    user = unique_user("narrowed")

    async def scenario() -> dict[str, Any] | None:
        async with stream(worker.api_url, user, NARROW_KEY) as narrow:
            await produce(worker.broker_url, [make_turn(user, "1", "I adopted a dog named Luna last year.")])
            first = await narrow.next_created()
            assert first is not None and json.loads(first["data"])["category"] == "Personal", first
            files.allow(["Goals"])
            # any request re-reads the changed YAML (the watcher does within a second anyway):
            # from here on the stream's next event is judged by the narrowed allowlist
            assert (await call(worker.api_url, "GET", "/openapi.json"))[0] == 200
            # one user's events keep their order: a Personal event would come first
            await produce(worker.broker_url, [make_turn(user, "2", "My sister Marta lives in Porto."),
                                              make_turn(user, "3", "My goal is to run a marathon in October.")])
            return await narrow.next_created()

    try:
        message = asyncio.run(scenario())
    finally:
        files.allow(["Goals", "Personal"])
    assert message is not None and json.loads(message["data"])["category"] == "Goals", message
    assert "Marta" not in message["data"]


def test_a_one_user_keys_streams_leave_the_admin_its_own(stack):
    worker, _ = stack

    async def scenario() -> None:
        async with stream(worker.api_url, ANA, ONE_USER_KEY), stream(worker.api_url, ANA, ONE_USER_KEY):
            status, body = await status_of(worker.api_url, f"/v1/users/{ANA}/events", ONE_USER_KEY)
            assert status == 429 and "event streams" in body, (status, body)
            async with stream(worker.api_url, ANA, ADMIN_KEY), stream(worker.api_url, ANA, ANA_ADMIN_KEY):
                pass

    asyncio.run(scenario())


def test_faust_views_answer_only_an_admin_key_for_every_user(stack):
    worker, _ = stack
    asyncio.run(produce(worker.broker_url, [make_turn(ANA, "1", "My goal is to learn the piano.")]))
    other = unique_user("fay")
    for path in ("/", "/router/", "/table/", "/table/users/", f"/table/users/{other}/",
                 f"/table/users/{ANA}/", "/table/lifecycle/", "/router/users/"):
        status, body = asyncio.run(status_of(worker.api_url, path, ANA_ADMIN_KEY))
        assert status == 403 and other not in body, (path, status, body[:200])
        assert asyncio.run(status_of(worker.api_url, path, ADMIN_KEY))[0] not in (401, 403), path
    status, _ = asyncio.run(status_of(worker.api_url, f"/v1/users/{ANA}/memories", ANA_ADMIN_KEY))
    assert status == 200, "the restricted admin keeps its own user's routes"
