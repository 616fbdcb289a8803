"""Purging one memory finds the `applied` records of its turns whatever colons its thread and
turn ids hold: a memory's provenance is `thread_id:turn_id`, which "chat:7" + "msg:3" and
"chat" + "7:msg:3" both write as "chat:7:msg:3", so every split is tried and each is confirmed
by the candidate ids derived from it (`streams.memory.purge.candidate_keys`). A replay of the
turn after the purge sends nothing of what was stored of it."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from streams.app.inprocess import InProcessPipeline
from streams.lifecycle.forgetting import purge
from streams.memory import ids
from streams.memory.model import Memory
from streams.memory.purge import candidate_keys, turn_splits
from streams.memory.tables import candidate_key
from streams.pipeline.records import Record
from streams.settings import Settings
from topics import names
from topics.commands import Command
from topics.turns import Turn

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
USER = "ana"
THREAD, TURN = "chat:2024:05", "msg:7:a"
"""Both ids hold colons: the first and the last colon of "chat:2024:05:msg:7:a" split it wrong."""
WORD = "Zorblatt"


def test_every_split_of_a_turn_ref_is_tried():
    assert turn_splits("a:b:c:d") == {("a", "b:c:d"), ("a:b", "c:d"), ("a:b:c", "d")}
    assert turn_splits("t:1") == {("t", "1")}
    assert turn_splits("nocolon") == set() and turn_splits(":x") == set() and turn_splits("x:") == set()
    keys = candidate_keys(USER, [f"{THREAD}:{TURN}"])
    assert candidate_key(USER, THREAD, TURN, ids.memory_id(USER, THREAD, TURN, 0)) in keys


def turn_record(turn: Turn, offset: int) -> Record:
    return Record(names.CHAT_TURNS, 0, offset, turn.user_id.encode(), turn.model_dump_json().encode(),
                  time.time())


@pytest.fixture
async def pipeline(tmp_path, minilm_embedder) -> InProcessPipeline:
    return InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)


async def test_a_purged_memory_of_a_turn_whose_ids_hold_colons_leaves_nothing_to_replay(pipeline):
    turn = Turn(user_id=USER, thread_id=THREAD, turn_id=TURN, role="user", speaker="Ana",
                text=f"I adopted a dog named {WORD}.", ts=T0)
    await pipeline.ingest_stage.handle(turn_record(turn, 0))
    await pipeline.deliver()
    [memory] = [m for m in pipeline.store.user_memories(USER) if WORD in m.summary]
    assert memory.source_turn_ids == [f"{THREAD}:{TURN}"]
    applied = pipeline.sealed.memory.applied
    key = candidate_key(USER, THREAD, TURN, memory.id)
    assert WORD in repr(applied.get(key)), "the turn's applied record holds the memory's events"

    delete = Command(command_id="d1", kind="delete", user_id=USER, memory_id=memory.id,
                     ts=T0 + timedelta(minutes=1))
    record = Record(names.MEMORY_COMMANDS, 0, 0, USER.encode(), delete.model_dump_json().encode(),
                    time.time())
    assert await pipeline.commands_stage.handle(record) == "applied"
    state = pipeline.store.state()
    deleted = state.memory(memory.id)
    assert isinstance(deleted, Memory) and deleted.state == "soft_deleted"
    purge(state, deleted, T0 + timedelta(days=40))
    pipeline.store.tables.flush()
    assert WORD not in repr(applied.get(key)), "the purge scrubbed the turn's applied record"

    sent_before = len(pipeline.sent_events())
    await pipeline.ingest_stage.handle(turn_record(turn, 1))  # the same turn, delivered again
    await pipeline.deliver()
    # The re-sent turn carries its own text, so ingest announces its candidate again; what was
    # stored of it (the memory's `created` event, kept in the turn's applied record) is not sent.
    replayed = [e for e in pipeline.sent_events()[sent_before:] if e.kind != "candidate"]
    assert not any(WORD in (event.summary or "") for event in replayed), replayed
    assert all(m.state != "active" for m in pipeline.store.user_memories(USER) if m.id == memory.id)
    assert not [m for m in pipeline.store.user_memories(USER) if WORD in m.summary]
