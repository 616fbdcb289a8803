"""`MemstreamStore` never reports a write it did not make: a put memstream stores in a category
the store's key may not see raises `OutOfScopeError` (each time it is put), each put is a turn of
its own value (a changed value is a new turn, the same value the same turn), and a delete is
confirmed by reading the memory back. Against a stand-in for the registry (the store against a
worker: tests/integration/test_memstream_store.py)."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from streams.memory.ids import memory_id as derived_memory_id
from streams.tools import memstream_store
from streams.tools.memstream_store import (
    MemstreamStore,
    OutOfScopeError,
    StoreError,
    WriteNotAppliedError,
    thread_of,
    turn_of,
)
from topics.progress import TurnProgress
from topics.turns import ID_PATTERN

NS = ("memories", "ana")
NOW = datetime(2024, 5, 1, 10, tzinfo=timezone.utc).isoformat()


class Registry:
    """The registry routes the store uses, over a dict of the memories its key sees; `hidden`
    are stored but outside the key's scope (answered 404, as the registry does)."""

    def __init__(self, deletes: bool = True) -> None:
        self.seen: dict[str, dict[str, Any]] = {}
        self.hidden: set[str] = set()
        self.deletes = deletes
        self.app = web.Application()
        self.app.router.add_get("/v1/users/{user}/memories", self.listed)
        self.app.router.add_get("/v1/users/{user}/memories/{id}", self.one)
        self.app.router.add_delete("/v1/users/{user}/memories/{id}", self.delete)
        self.app.router.add_post("/v1/users/{user}/memories/{id}/restore", self.restore)

    def add(self, memory_id: str, thread: str, turn: str, category: str = "Goals") -> None:
        self.seen[memory_id] = {
            "id": memory_id, "user_id": "ana", "summary": "The user wants to run a marathon.",
            "category": category, "state": "active", "pinned": False, "thread_id": thread,
            "source_turn_ids": [f"{thread}:{turn}"], "created_at": NOW, "updated_at": NOW}

    async def listed(self, request: web.Request) -> web.Response:
        thread = request.query.get("thread_id")
        return web.json_response({"items": [m for m in self.seen.values()
                                            if thread is None or m["thread_id"] == thread]})

    async def one(self, request: web.Request) -> web.Response:
        memory = self.seen.get(request.match_info["id"])
        return web.json_response(memory) if memory else web.json_response({"error": "no such memory"}, status=404)

    async def delete(self, request: web.Request) -> web.Response:
        if self.deletes:
            self.seen[request.match_info["id"]]["state"] = "soft_deleted"
        return web.json_response({"status": "applied", "commands": []})

    async def restore(self, request: web.Request) -> web.Response:
        self.seen[request.match_info["id"]]["state"] = "active"
        return web.json_response({"status": "applied", "commands": []})


@pytest.fixture
async def registry():
    registry = Registry()
    server = TestServer(registry.app)
    await server.start_server()
    registry.url = str(server.make_url(""))  # type: ignore[attr-defined]
    yield registry
    await server.close()


@pytest.fixture
def remembered(monkeypatch, registry) -> list[str]:
    """The turn ids the store sends (memstream's side stood in for: the turn becomes the memory
    of its derived id, in Personal, outside the key's scope, unless its text is a goal)."""
    turns: list[str] = []

    async def remember(self, user: str, key: str, text: str, turn_id: str) -> TurnProgress:
        turns.append(turn_id)
        memory_id = derived_memory_id(user, thread_of(key), turn_id, 0)
        if "marathon" in text:
            registry.add(memory_id, thread_of(key), turn_id)
        else:
            registry.hidden.add(memory_id)
        self.store._remembered[(user, key)] = memory_id
        return TurnProgress(user_id=user, thread_id=thread_of(key), turn_id=turn_id, stage="dedup",
                            outcome="created", fact_index=0, fact_count=1, memory_id=memory_id)

    monkeypatch.setattr(memstream_store._Calls, "remember", remember)
    return turns


def store_of(registry: Registry) -> MemstreamStore:
    return MemstreamStore(registry.url, "key", "planner", broker="unused:9092", timeout_s=10)  # type: ignore[attr-defined]


def test_each_put_is_a_turn_of_its_own_value():
    pet = {"text": "I adopted a dog named Luna."}
    assert turn_of(NS, "pet", pet) == turn_of(NS, "pet", dict(pet))
    assert len({turn_of(NS, "pet", pet), turn_of(NS, "pet", {"text": "I adopted a cat."}),
                turn_of(NS, "pet2", pet), turn_of(("memories", "bob"), "pet", pet),
                turn_of(NS, "pet", pet, ["text"])}) == 5
    assert re.match(ID_PATTERN, turn_of(NS, "a key / with spaces", pet))
    assert turn_of(NS, "pet", pet) != "put"


async def test_a_put_outside_the_keys_scope_raises_every_time_and_changes_nothing_silently(registry, remembered):
    store = store_of(registry)
    pet = {"text": "I adopted a dog named Luna."}
    with pytest.raises(OutOfScopeError) as refused:
        await store.aput(NS, "pet", pet)
    assert refused.value.outcome == "created" and issubclass(OutOfScopeError, StoreError)
    with pytest.raises(OutOfScopeError):  # the same value again: the same turn, refused again
        await store.aput(NS, "pet", pet)
    with pytest.raises(OutOfScopeError):
        await store.aput(NS, "pet", {"text": "I adopted a dog named Rex."})
    assert remembered[0] == remembered[1] != remembered[2], "a changed value is a new turn"
    assert await store.aget(NS, "pet") is None
    with pytest.raises(OutOfScopeError):  # it cannot delete what its key cannot see
        await store.adelete(NS, "pet")

    await store.aput(NS, "pet", {"text": "I want to run a marathon."})  # a value of its scope
    item = await store.aget(NS, "pet")
    assert item is not None and item.key == derived_memory_id("ana", thread_of("pet"), remembered[3], 0)


async def test_any_store_finds_a_keys_memory_in_the_keys_thread(registry, remembered):
    await store_of(registry).aput(NS, "goal", {"text": "I want to run a marathon."})
    fresh = store_of(registry)  # never put the key: it does not know the value's turn
    item = await fresh.aget(NS, "goal")
    assert item is not None and item.value["thread_id"] == thread_of("goal")
    await fresh.adelete(NS, "goal")
    assert registry.seen[item.key]["state"] == "soft_deleted"
    assert await fresh.aget(NS, "goal") is None
    await fresh.adelete(NS, "goal")  # absent now: nothing to do


async def test_a_delete_that_leaves_the_memory_live_raises(registry, remembered):
    registry.deletes = False  # a registry that answers 200 and keeps the memory active
    store = store_of(registry)
    await store.aput(NS, "goal", {"text": "I want to run a marathon."})
    with pytest.raises(WriteNotAppliedError, match="still active"):
        await store.adelete(NS, "goal")
