"""An Idempotency-Key is bound to the write it was given for (method, path: user and memory,
body): a retry of that write is answered with its outcome, a reuse for anything else is a 409
`idempotency_key_reused` that changes nothing — never 200 "applied" with the first write's
outcome. The commands stage refuses such a command if it gets there first, and a request waiting
for its command never takes the first write's outcome for its own."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from streams.api import command_ids
from streams.api.command_waiter import CommandWaiter, refused_as_reused
from streams.api.registry import ROUTES, USER
from streams.app.inprocess import InProcessPipeline
from streams.pipeline.records import Record
from streams.settings import Settings
from tests.unit.api.inprocess_registry import ADMIN, PLANNER, Registry
from topics import names
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.turns import Turn

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
MEMORY = ROUTES[USER + "/memories/{memory_id}"]
PIN = ROUTES[USER + "/memories/{memory_id}/pin"]
STATUS = ROUTES[USER + "/commands/{command_id}"]


@pytest.fixture
async def registry(tmp_path, minilm_embedder, monkeypatch) -> Registry:
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    await pipeline.ingest([Turn(user_id="ana", thread_id="t1", turn_id="1", role="user", speaker="Ana",
                                text="I want to run a marathon in October.", ts=T0)])
    return Registry(pipeline, monkeypatch)


def goal(registry: Registry) -> str:
    [memory] = registry.pipeline.store.user_memories("ana")
    return memory.id


async def patch(registry: Registry, memory_id: str, text: str, key: str = "k1",
                principal=ADMIN) -> tuple[int, dict]:
    return await registry.call(MEMORY, "patch", f"/v1/users/ana/memories/{memory_id}", principal,
                               body={"text": text}, headers={"Idempotency-Key": key},
                               user_id="ana", memory_id=memory_id)


def summary(registry: Registry, memory_id: str) -> str:
    return registry.pipeline.store.state().memory(memory_id).summary  # type: ignore[union-attr]


async def test_a_key_reused_for_another_write_is_a_409_that_changes_nothing(registry):
    memory_id = goal(registry)
    status, first = await patch(registry, memory_id, "Ana plans a marathon in May.")
    assert status == 202 and first["commands"][0]["command_id"] == "k1"
    await registry.pipeline.deliver()
    assert summary(registry, memory_id) == "Ana plans a marathon in May."

    status, retried = await patch(registry, memory_id, "Ana plans a marathon in May.")
    assert status == 200 and retried["status"] == "applied", "a retry: the first outcome"
    assert [e["summary"] for e in retried["commands"][0]["events"]] == ["Ana plans a marathon in May."]

    status, reused = await patch(registry, memory_id, "Ana plans a marathon in June.")
    assert status == 409, reused
    assert reused["code"] == "idempotency_key_reused" and "another write" in reused["error"]
    status, pinned = await registry.call(PIN, "post", f"/v1/users/ana/memories/{memory_id}/pin",
                                         headers={"Idempotency-Key": "k1"}, user_id="ana",
                                         memory_id=memory_id)
    assert status == 409 and pinned["code"] == "idempotency_key_reused"
    await registry.pipeline.deliver()
    memory = registry.pipeline.store.state().memory(memory_id)
    assert memory is not None and memory.summary == "Ana plans a marathon in May." and not memory.pinned
    assert not registry.pipeline.topics.sent[names.MEMORY_COMMANDS_DLQ]

    # the key's name stays the first write's, and another principal's same name is its own
    status, outcome = await registry.call(STATUS, "get", "/v1/users/ana/commands/k1",
                                          user_id="ana", command_id="k1")
    assert status == 200 and [e["summary"] for e in outcome["events"]] == ["Ana plans a marathon in May."]
    status, other = await patch(registry, memory_id, "Ana plans a marathon in July.", principal=PLANNER)
    assert status == 202 and other["commands"][0]["command_id"] == "k1"


async def test_the_binding_is_the_method_the_path_and_the_body():
    key = command_ids.binding_key(b"m" * 32)
    edit = command_ids.binding(key, "PATCH", "/v1/users/ana/memories/m1", '{"text":"a"}')
    assert edit == command_ids.binding(key, "patch", "/v1/users/ana/memories/m1", '{"text":"a"}')
    assert len({edit,
                command_ids.binding(key, "PATCH", "/v1/users/ana/memories/m1", '{"text":"b"}'),
                command_ids.binding(key, "PATCH", "/v1/users/ana/memories/m2", '{"text":"a"}'),
                command_ids.binding(key, "PATCH", "/v1/users/bob/memories/m1", '{"text":"a"}'),
                command_ids.binding(key, "POST", "/v1/users/ana/memories/m1/pin"),
                command_ids.binding(key, "DELETE", "/v1/users/ana/memories/m1")}) == 6
    # keyed: a digest of a sealed text confirms no guess of it to a reader of memory.commands
    assert edit != command_ids.binding(command_ids.binding_key(b"n" * 32), "PATCH",
                                       "/v1/users/ana/memories/m1", '{"text":"a"}')


def command_record(command: Command) -> Record:
    return Record(names.MEMORY_COMMANDS, 0, 0, command.user_id.encode(),
                  command.model_dump_json().encode(), time.time())


async def test_the_commands_stage_refuses_an_id_applied_for_another_binding(registry):
    memory_id = goal(registry)
    stage = registry.pipeline.commands_stage
    first = Command(command_id="api/x/k", kind="pin", user_id="ana", ts=T0, memory_id=memory_id,
                    binding="a" * 32)
    assert await stage.handle(command_record(first)) == "applied"
    assert await stage.handle(command_record(first)) == "applied", "a replay of the same write"
    other = first.model_copy(update={"kind": "delete", "binding": "b" * 32})
    assert await stage.handle(command_record(other)) == "dlq"
    [letter] = [DeadLetter.model_validate_json(r.value or b"")
                for r in registry.pipeline.topics.sent[names.MEMORY_COMMANDS_DLQ]]
    assert letter.reason == "idempotency_key_reused"
    memory = registry.pipeline.store.state().memory(memory_id)
    assert memory is not None and memory.state == "active" and memory.pinned
    unbound = first.model_copy(update={"command_id": "thread:turn:pin", "binding": None})
    assert await stage.handle(command_record(unbound)) == "applied", "a chat command binds nothing"


async def test_a_waiting_request_takes_only_the_outcome_of_its_own_write():
    waiter = CommandWaiter()
    mine = waiter.expect("ana", "api/x/k", "b" * 32)
    anyone = waiter.expect("ana", "api/x/k")
    waiter.applied("ana", "api/x/k", [{"kind": "updated"}], binding="a" * 32)
    assert anyone.done() and not mine.done(), "the first write's outcome is not this request's"
    waiter.rejected("ana", "api/x/k", "idempotency_key_reused: applied for another operation",
                    binding="b" * 32)
    assert mine.done() and refused_as_reused(mine.result())
