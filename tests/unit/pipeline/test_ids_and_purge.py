"""Ids are free text, so keys made from them must never meet: users `a`, `a:x` and `a|x` (and a
thread `x|y` of `a` against a thread `y` of `a|x`) never see, change or purge each other. A purge
deletes the user's data key and touches only the user's own keys."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from streams.settings import Settings
from streams.app.inprocess import InProcessPipeline
from topics import names
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.turns import Turn

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
USERS = {"a": "x|y", "a:x": "y", "a|x": "y"}  # user -> thread


def turn(user: str, thread: str, turn_id: str, text: str, ts: datetime = T0) -> Turn:
    return Turn(user_id=user, thread_id=thread, turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts=ts)


async def pipeline_with_three_users(tmp_path, embedder) -> InProcessPipeline:
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), embedder)
    await pipeline.ingest([turn(user, thread, "1", f"I adopted a dog named Rex{i}.")
                           for i, (user, thread) in enumerate(USERS.items())])
    return pipeline


def summaries(pipeline: InProcessPipeline, user: str) -> list[str]:
    return sorted(m.summary for m in pipeline.store.user_memories(user) if m.is_visible)


async def test_users_whose_ids_share_separators_keep_their_own_memories(tmp_path, minilm_embedder):
    pipeline = await pipeline_with_three_users(tmp_path, minilm_embedder)
    assert [summaries(pipeline, u) for u in USERS] == [["Ana adopted a dog named Rex0."],
                                                      ["Ana adopted a dog named Rex1."],
                                                      ["Ana adopted a dog named Rex2."]]
    ids = [m.id for u in USERS for m in pipeline.store.user_memories(u)]
    assert len(set(ids)) == 3
    threads = [k for k in pipeline.raw_tables["thread_revs"]]
    assert len(threads) == 3, "one thread record per (user, thread)"


async def test_a_purge_deletes_the_users_key_and_touches_only_the_users_keys(tmp_path, minilm_embedder):
    pipeline = await pipeline_with_three_users(tmp_path, minilm_embedder)
    before = {name: dict(table) for name, table in pipeline.raw_tables.items()}
    purge = Command(command_id="p1", kind="purge_user", user_id="a", ts=T0 + timedelta(days=1))
    await pipeline.topics.send(names.MEMORY_COMMANDS, b"a", purge.model_dump_json().encode())
    await pipeline.deliver()
    assert summaries(pipeline, "a") == []
    assert summaries(pipeline, "a:x") == ["Ana adopted a dog named Rex1."]
    assert summaries(pipeline, "a|x") == ["Ana adopted a dog named Rex2."]
    others = ("a:x", "a|x")
    for name, table in pipeline.raw_tables.items():
        for key, value in before[name].items():
            text = key.decode() if isinstance(key, bytes) else str(key)
            if any(f'"{o}"' in text or text == o or (isinstance(value, dict) and value.get("user_id") == o)
                   for o in others):
                assert table.get(key) == value, f"the purge changed {name}[{text}] of another user"
    assert pipeline.sealed.keys.purged_at("a") == T0 + timedelta(days=1)


async def test_a_replayed_turn_of_a_purged_user_is_refused_without_its_content(tmp_path, minilm_embedder):
    pipeline = await pipeline_with_three_users(tmp_path, minilm_embedder)
    purge = Command(command_id="p1", kind="purge_user", user_id="a", ts=T0 + timedelta(days=1))
    await pipeline.topics.send(names.MEMORY_COMMANDS, b"a", purge.model_dump_json().encode())
    await pipeline.deliver()
    await pipeline.ingest([turn("a", "x|y", "1", "I adopted a dog named Rex0.")])
    assert summaries(pipeline, "a") == []
    [letter] = [DeadLetter.model_validate_json(r.value or b"")
                for r in pipeline.topics.sent[names.CHAT_TURNS_DLQ]]
    assert letter.reason == "purged_user" and letter.raw_withheld and not letter.raw_b64
    later = turn("a", "x|y", "2", "I adopted a cat named Mia.", T0 + timedelta(days=2))
    await pipeline.ingest([later])
    assert summaries(pipeline, "a") == ["Ana adopted a cat named Mia."], "a new start after the purge"
