"""Reads refresh last_accessed/access_count through the stream (a `touch` command)."""
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from streams.memory.access import record_reads
from tests.unit.agents.conftest import data_view, local_topics, worker  # noqa: F401 - fixtures
from streams.memory.model import Memory
from streams.memory.vector_index import VectorIndex, encode_vector
from topics.commands import Command

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
READ = T0 + timedelta(days=3)


def memory(i: str, user: str = "u1", dim: int = 4, **fields) -> Memory:
    return Memory(id=i, user_id=user, type="semantic", summary=f"Ana fact {i}.", created_at=T0,
                  updated_at=T0, last_accessed=T0, embedding_b64=encode_vector(np.eye(dim)[0]), **fields)


def touch(command_id: str, *memory_ids: str, ts: datetime = READ) -> Command:
    return Command(command_id=command_id, kind="touch", user_id="u1", ts=ts, memory_ids=list(memory_ids))


def test_touch_needs_memory_ids():
    with pytest.raises(ValueError, match="touch needs memory_ids"):
        Command(command_id="c", kind="touch", user_id="u1", ts=READ)


def test_a_touch_refreshes_once_and_skips_what_is_not_the_users_active_memory():
    docs = {m.id: m.model_dump(mode="json") for m in
            (memory("a"), memory("gone", state="soft_deleted"), memory("theirs", user="u2"))}
    index, applied = VectorIndex(4), {}
    index.rebuild(Memory.model_validate(d) for d in docs.values())
    assert record_reads(docs, applied, index, touch("t1", "a", "gone", "theirs", "missing")) == ["a"]
    assert record_reads(docs, applied, index, touch("t1", "a")) == [], "a redelivered touch applies once"
    record_reads(docs, applied, index, touch("t2", "a", ts=T0 - timedelta(days=9)))
    a = Memory.model_validate(docs["a"])
    assert (a.last_accessed, a.access_count) == (READ, 2), "last_accessed never goes back"
    assert index.user("u1").docs["a"].access_count == 2, "the index sees the read too"
    assert docs["gone"]["access_count"] == 0 and docs["theirs"]["access_count"] == 0


async def test_the_commands_stage_applies_touches_without_events(worker, local_topics):  # noqa: F811
    data_view(worker, "memories")["a"] = memory("a", dim=384).model_dump(mode="json")  # MiniLM's dimension
    worker.store.mark_stale()
    async with worker.faust.agents["commands"].test_context() as agent:
        raw = touch("t1", "a").model_dump_json().encode()
        await agent.put(raw, key=b"u1")
        await agent.put(raw, key=b"u1")
    doc = worker.sealed.memory.memories["a"]
    assert doc["access_count"] == 1 and doc["last_accessed"].startswith("2024-05-04")
    assert doc["version"] == 1, "a read is not a change: no version, no event, no audit"
    assert not local_topics.sent, "a touch sends nothing"
