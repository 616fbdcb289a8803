"""A worker's web app served in process (`aiohttp.test_utils.TestServer`), with its own key file
and categories YAML: the real middlewares, views, hub and `StreamAuth`, on in-memory tables.

Nothing waits on time: a file change is stamped with `os.utime` (the watchers compare inode,
modification time and size), the watcher's look is called by the test (`recheck`), events are
published into the hub, and every read of a stream is awaited (`GUARD_S` only guards a hang)."""
from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp.test_utils import TestClient, TestServer

from streams.api import auth, sse
from streams.api.state import WebState
from streams.app.factory import MemstreamApp
from streams.read.categories import DEFAULT_PATH, load_policy
from streams.settings import Settings
from streams.worker import build_worker

GUARD_S = 60.0
"""Longest a read of a stream may take before the test fails: a guard against a hang only."""

ADMIN, NARROW, ONE_USER, ANA_ADMIN = (auth.new_key() for _ in range(4))
KEYS = {
    ADMIN: auth.entry_for(ADMIN, "ops", "admin"),
    NARROW: auth.entry_for(NARROW, "narrow", "agent"),  # allowlist: Goals, Personal (`ALLOWED`)
    ONE_USER: auth.entry_for(ONE_USER, "supervisor", "agent", ["ana"]),
    ANA_ADMIN: auth.entry_for(ANA_ADMIN, "ana-ops", "admin", ["ana"]),
}
ALLOWED = ["Goals", "Personal"]


def event(event_id: str, category: str = "Goals", user: str = "ana") -> dict[str, Any]:
    return {"event_id": event_id, "kind": "created", "user_id": user, "memory_id": f"m-{event_id}",
            "category": category, "summary": f"{category} memory {event_id}"}


@dataclass
class Served:
    """The served app, its files (as the test changes them) and the streams a test left open."""

    keys_file: Path
    categories_file: Path
    app: MemstreamApp | None = None
    client: TestClient | None = None
    mtime: int = 1_000_000_000
    keys: dict[str, auth.KeyEntry] = field(default_factory=lambda: dict(KEYS))
    open_streams: list[aiohttp.ClientResponse] = field(default_factory=list)

    @property
    def hub(self) -> Any:
        return WebState.of(self.app.faust).hub

    @property
    def stream_auth(self) -> sse.StreamAuth:
        return sse.stream_auth_of(self.app.faust)

    def _stamp(self, path: Path) -> None:
        self.mtime += 1_000_000_000
        os.utime(path, ns=(self.mtime, self.mtime))

    def write_keys(self, *, text: str | None = None) -> None:
        """Write the key file (the entries of `keys`, or `text`): a change the watchers see."""
        self.keys_file.write_text(text if text is not None else json.dumps(
            [e.model_dump(exclude_none=True) for e in self.keys.values()]))
        self._stamp(self.keys_file)

    def allow(self, categories: list[str] | None) -> None:
        """Write the categories YAML with agent `narrow` allowed `categories` (None: no allowlist)."""
        policy = yaml.safe_load(DEFAULT_PATH.read_text())
        if categories is not None:
            policy["allowlists"]["narrow"] = categories
        self.categories_file.write_text(yaml.safe_dump(policy))
        self._stamp(self.categories_file)

    def recheck(self) -> bool:
        """The watcher's look (what the timer does every SSE_AUTH_CHECK_SECONDS)."""
        return sse.recheck_streams(self.stream_auth, self.hub)

    def known(self, *users: str) -> None:
        """Give `users` a record in the `users` table: they have data."""
        for user in users:
            self.app.tables.users.data[user] = b"{}"

    @asynccontextmanager
    async def stream(self, user: str, key: str) -> AsyncIterator["Stream"]:
        response = await self.client.get(f"/v1/users/{user}/events",
                                         headers={"Authorization": f"Bearer {key}"})
        try:
            yield Stream(response)
        finally:
            response.close()

    async def status_of_stream(self, user: str, key: str) -> int:
        """The status an event stream of `user` is answered with (left open while the test runs
        when 200: `open_streams` holds it)."""
        response = await self.client.get(f"/v1/users/{user}/events",
                                         headers={"Authorization": f"Bearer {key}"})
        if response.status == 200:
            self.open_streams.append(response)
        else:
            await response.read()
            response.close()
        return response.status


class Stream:
    """The messages of one open event stream (its 200 came: it is subscribed)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        assert response.status == 200, response.status
        self.response = response

    async def next(self) -> dict[str, str] | None:
        """The next message (`id`, `event`, `data`); None once the stream ended."""
        return await asyncio.wait_for(self._next(), GUARD_S)

    async def _next(self) -> dict[str, str] | None:
        message: dict[str, str] = {}
        async for raw in self.response.content:
            line = raw.decode().rstrip("\r\n")
            if not line:
                if message:
                    return message
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            message[name] = value.lstrip(" ")
        return None

    async def next_id(self) -> str | None:
        message = await self.next()
        return None if message is None else message.get("id")


@asynccontextmanager
async def served(tmp_path: Path, **settings: Any) -> AsyncIterator[Served]:
    """The web app of a worker built on `tmp_path` (its key file holds `KEYS`, its categories
    allow agent `narrow` `ALLOWED`), this worker owning every user."""
    keys_file, categories_file = tmp_path / "keys.json", tmp_path / "categories.yaml"
    state = Served(keys_file, categories_file)
    state.write_keys()
    state.allow(ALLOWED)
    load_policy.cache_clear()
    app = build_worker(Settings(table_store="memory://", data_dir=tmp_path / "data",  # type: ignore[arg-type]
                                api_keys_file=keys_file, categories_path=categories_file, **settings))
    app.faust.web.blueprints.apply(app.faust.web)  # Faust's views, as the worker adds them at start
    state.app = app
    owner_of = sse.owner_of
    sse.owner_of = lambda view, user_id: None  # type: ignore[assignment]
    try:
        async with TestClient(TestServer(app.faust.web.web_app)) as client:
            state.client = client
            try:
                yield state
            finally:
                for response in state.open_streams:
                    response.close()
    finally:
        sse.owner_of = owner_of  # type: ignore[assignment]
        load_policy.cache_clear()
