"""A keyless record, or one a producer put on another partition than its user's (murmur2 of the
user_id), never makes the user a data key: a second key on another partition would stop the
user's data opening where it lives, and a purge would shred only one of the two."""
from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest
from aiokafka.partitioner import DefaultPartitioner
from faust.streams import _current_event

from streams.settings import Settings
from streams.pipeline.dead_letters import dead_letter_of
from streams.app.inprocess import InProcessPipeline
from streams.pipeline.records import Record
from streams.privacy.crypto import new_key
from streams.privacy.placement import MisroutedRecord, partition_for
from streams.privacy.sealed import Sealer
from streams.privacy.user_keys import UserKeys
from topics import names
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.turns import Turn

PARTITIONS = 4
T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
USER = "ana"
HOME = partition_for(USER, PARTITIONS)
AWAY = (HOME + 1) % PARTITIONS


class FakeEvent:
    """What `streams.privacy.placement` reads of a Faust event being processed in a worker."""

    def __init__(self, partition: int, topic: str) -> None:
        self.message = SimpleNamespace(partition=partition, topic=topic)
        self.app = SimpleNamespace(consumer=SimpleNamespace(topic_partitions=lambda t: PARTITIONS))


@contextmanager
def on_partition(partition: int, topic: str = names.CHAT_TURNS) -> Iterator[None]:
    """Process as a worker does a record of `topic` fetched from `partition`."""
    event = FakeEvent(partition, topic)
    token = _current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        _current_event.reset(token)


def test_a_users_partition_is_the_one_kafkas_default_partitioner_picks():
    for user in ("ana", "bo", "user-42", "ünïcode"):
        expected = DefaultPartitioner()(user.encode(), list(range(PARTITIONS)), [])
        assert partition_for(user, PARTITIONS) == expected


def test_a_key_is_made_only_on_the_users_partition():
    keys = UserKeys({}, new_key())
    with on_partition(AWAY), pytest.raises(MisroutedRecord) as caught:
        keys.seal(USER, b"Ana has a dog.")
    assert caught.value.reason == "wrong_partition" and keys.table == {}
    with on_partition(AWAY), pytest.raises(MisroutedRecord):
        keys.shred(USER, T0)
    assert keys.table == {}, "nor shredded from another partition"
    with on_partition(HOME):
        keys.seal(USER, b"Ana has a dog.")
    assert set(keys.table) == {USER}
    keys.seal("bo", b"outside a worker's stream (in process) there are no partitions to check")


def letter(key: bytes | None, partition: int, reason: str = "invalid_schema") -> tuple[DeadLetter, dict]:
    table: dict = {}
    raw = b'{"user_id": "ana", "text": "I adopted Luna", "ts": 3}'
    with on_partition(partition):
        made = dead_letter_of(Record(names.CHAT_TURNS, partition, 7, key, raw), "ingest", reason,
                              "ts", 4096, Sealer(UserKeys(table, new_key())))
    return made, table


def test_a_keyless_dead_letter_keeps_no_content_and_makes_no_key():
    made, table = letter(None, AWAY)
    assert made.raw_withheld and made.raw_sealed is None and not made.raw_b64
    assert made.key == USER and table == {}, "named by its value's user_id, but no key made"


def test_a_dead_letter_on_another_partition_than_its_users_keeps_no_content_and_makes_no_key():
    made, table = letter(USER.encode(), AWAY)
    assert made.raw_withheld and made.raw_sealed is None and table == {}
    home, table = letter(USER.encode(), HOME)
    assert home.raw_sealed is not None and set(table) == {USER}, "on its user's partition: sealed"


@pytest.fixture
def pipeline(tmp_path, minilm_embedder) -> InProcessPipeline:
    return InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)


async def test_a_turn_on_another_partition_is_dead_lettered_and_makes_nothing(pipeline):
    pipeline.ingest_stage.record_scope = lambda record: on_partition(record.partition)
    turn = Turn(user_id=USER, thread_id="t", turn_id="1", role="user", speaker="Ana",
                text="I adopted a dog named Luna.", ts=T0)
    await pipeline.ingest_stage.handle(Record(names.CHAT_TURNS, AWAY, 0, USER.encode(),
                                              turn.model_dump_json().encode()))
    [dlq] = [DeadLetter.model_validate_json(r.value or b"")
             for r in pipeline.topics.sent[names.CHAT_TURNS_DLQ]]
    assert dlq.reason == "wrong_partition" and dlq.raw_withheld
    assert pipeline.sealed.keys.table == {}, "no key for the user"
    assert not pipeline.topics.sent[names.MEMORY_CANDIDATES]
    assert not any(pipeline.raw_tables[name] for name in ("buffers", "turn_log"))


async def test_a_purge_on_another_partition_is_refused_not_reported_applied(pipeline):
    await pipeline.ingest([Turn(user_id=USER, thread_id="t", turn_id="1", role="user",
                                speaker="Ana", text="I adopted a dog named Luna.", ts=T0)])
    assert pipeline.store.user_memories(USER)
    purge = Command(command_id="p1", kind="purge_user", user_id=USER, ts=T0)
    record = Record(names.MEMORY_COMMANDS, AWAY, 0, USER.encode(), purge.model_dump_json().encode())
    with on_partition(AWAY, names.MEMORY_COMMANDS):
        assert await pipeline.commands_stage.handle(record) == "dlq"
    [dlq] = [DeadLetter.model_validate_json(r.value or b"")
             for r in pipeline.topics.sent[names.MEMORY_COMMANDS_DLQ]]
    assert dlq.reason == "wrong_partition"
    assert pipeline.store.user_memories(USER), "nothing purged on the wrong partition"
    assert pipeline.sealed.keys.purged_at(USER) is None
