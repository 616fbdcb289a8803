"""A purge is final: a replay after a crash purges again, a turn still in flight when the purge
took effect brings nothing back, and purging one memory leaves no summary of it in any table."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from streams.settings import Settings
from streams.lifecycle.forgetting import purge
from streams.memory.model import Memory
from streams.app.inprocess import InProcessPipeline
from streams.pipeline.records import Record
from topics import names
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.turns import Turn

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
USER = "ana"


def turn(turn_id: str, text: str, ts: datetime = T0, thread: str = "t") -> Turn:
    return Turn(user_id=USER, thread_id=thread, turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts=ts)


def turn_record(t: Turn, produced_at: float) -> Record:
    return Record(names.CHAT_TURNS, 0, 0, t.user_id.encode(), t.model_dump_json().encode(),
                  produced_at)


async def command(pipeline: InProcessPipeline, cmd: Command) -> str:
    record = Record(names.MEMORY_COMMANDS, 0, 0, cmd.user_id.encode(), cmd.model_dump_json().encode(),
                    time.time())
    return await pipeline.commands_stage.handle(record)


def visible(pipeline: InProcessPipeline) -> list[str]:
    return sorted(m.summary for m in pipeline.store.user_memories(USER) if m.is_visible)


@pytest.fixture
async def pipeline(tmp_path, minilm_embedder) -> InProcessPipeline:
    p = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    await p.ingest([turn("1", "I adopted a dog named Luna.")])
    assert visible(p) == ["Ana adopted a dog named Luna."]
    return p


async def test_a_purge_replayed_after_its_shred_was_lost_shreds_again(pipeline):
    """A crash lands the purge's `applied` record but loses its writes to `user_keys` and
    `memories` (separate changelog topics): the recovery brings the old key and documents back."""
    keys, memories = pipeline.sealed.keys.table, pipeline.raw_tables["memories"]
    old_key, old_docs = dict(keys), dict(memories)
    data_key = pipeline.sealed.keys.data_key(USER)
    purge_cmd = Command(command_id="p1", kind="purge_user", user_id=USER, ts=T0)
    assert await command(pipeline, purge_cmd) == "applied"
    assert visible(pipeline) == []
    keys.clear(), keys.update(old_key)  # the recovered changelogs: the shred and the pops lost
    memories.update(old_docs)
    pipeline.sealed.keys.forget_cache()
    pipeline.store.mark_stale()
    assert visible(pipeline) == ["Ana adopted a dog named Luna."], "the crash brought it back"
    assert await command(pipeline, purge_cmd) == "applied"  # the replay
    assert visible(pipeline) == [], "the replay purged again"
    assert pipeline.sealed.keys.data_key(USER) != data_key, "the old key shredded again"
    assert pipeline.sealed.keys.purged_at(USER) == T0


async def test_a_replayed_purge_keeps_the_epoch_of_its_first_shred(pipeline):
    purge_cmd = Command(command_id="p1", kind="purge_user", user_id=USER, ts=T0)
    await command(pipeline, purge_cmd)
    first = pipeline.sealed.keys.purge_epoch(USER)
    await command(pipeline, purge_cmd)
    assert pipeline.sealed.keys.purge_epoch(USER) == first, "turns sent in between stay accepted"


async def test_a_turn_in_flight_when_the_purge_took_effect_brings_nothing_back(pipeline):
    """The registry dates a purge at the user's clock (T0); a turn dated later that was already
    on `chat.turns` (produced before the purge) is consumed after it."""
    in_flight = turn_record(turn("2", "I adopted a cat named Mia.", T0 + timedelta(hours=1)),
                            time.time())
    assert await command(pipeline, Command(command_id="p1", kind="purge_user", user_id=USER,
                                           ts=T0)) == "applied"
    await pipeline.ingest_stage.handle(in_flight)
    await pipeline.deliver()
    assert visible(pipeline) == []
    [letter] = [DeadLetter.model_validate_json(r.value or b"")
                for r in pipeline.topics.sent[names.CHAT_TURNS_DLQ]]
    assert letter.reason == "purged_user" and letter.raw_withheld
    after = turn_record(turn("3", "I adopted a parrot named Kiwi.", T0 + timedelta(hours=2)),
                        time.time() + 1)
    await pipeline.ingest_stage.handle(after)
    await pipeline.deliver()
    assert visible(pipeline) == ["Ana adopted a parrot named Kiwi."], "a turn sent after it is kept"


def opened_tables(pipeline: InProcessPipeline) -> dict[str, dict[Any, Any]]:
    """Every table as a holder of the master key would read it (opened)."""
    sealed = pipeline.sealed
    tables = {"memories": sealed.memory.memories, "applied": sealed.memory.applied,
              "users": sealed.memory.users, "thread_revs": sealed.memory.thread_revs,
              "audit": sealed.memory.audit, "recent_events": sealed.recent_events}
    return {name: dict(table.items()) for name, table in tables.items()}


async def test_purging_one_memory_leaves_no_summary_in_any_table(pipeline):
    [memory] = pipeline.store.user_memories(USER)
    for n, (kind, fields) in enumerate([("edit", {"text": "Ana's dog Luna is a beagle."}),
                                        ("pin", {}), ("unpin", {}), ("delete", {})]):
        cmd = Command(command_id=f"c{n}", kind=kind, user_id=USER, memory_id=memory.id,  # type: ignore[arg-type]
                      ts=T0 + timedelta(minutes=n + 1), **fields)
        assert await command(pipeline, cmd) == "applied", kind
    state = pipeline.store.state()
    deleted = state.memory(memory.id)
    assert isinstance(deleted, Memory) and deleted.state == "soft_deleted"
    before = repr(opened_tables(pipeline))
    assert "beagle" in before and "adopted a dog" in before
    purge(state, deleted, T0 + timedelta(days=40))
    after = opened_tables(pipeline)
    for name, table in after.items():
        for key, value in table.items():
            text = repr(value)
            assert "beagle" not in text and "adopted a dog" not in text, f"{name}[{key}]: {text[:300]}"
    assert state.memory(memory.id).state == "purged"  # type: ignore[union-attr]
    replayed = Command(command_id="c0", kind="edit", user_id=USER, memory_id=memory.id,
                       text="Ana's dog Luna is a beagle.", ts=T0 + timedelta(minutes=1))
    await command(pipeline, replayed)
    assert "beagle" not in repr(opened_tables(pipeline)), "a replayed command brings nothing back"
