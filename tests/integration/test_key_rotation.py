"""The users' keys on a real worker and broker: a turn on another partition than its user's makes
no key, the key changelog carries the compaction configs, and a master-key rotation
(`memstream keys rotate`) leaves a worker that knows only the new master key reading every
memory."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from streams.app.topic_admin import create_topics, topic_configs
from streams.privacy.crypto import encode_key, new_key
from streams.privacy.placement import partition_for
from streams.tools.key_rotation import group_members
from streams.privacy.user_keys import CHANGELOG_CONFIGS
from streams.tools.broker import EmbeddedBroker
from streams.tools.unseal import changelog_topic, read_table
from tests.integration.conftest import (NO_LIFECYCLE, PARTITIONS, Worker, make_turn, memories,
                                        produce, read_all, unique_user, wait_processed)
from streams.app.topology import ALL_TOPICS
from topics.names import CHAT_TURNS, CHAT_TURNS_DLQ

pytestmark = pytest.mark.integration
ROOT = Path(__file__).parents[2]
APP_ID = "memstream-rotate"
PETS = ["Luna", "Milo", "Nora"]


def rotate(broker_url: str, old: str, new_key_file: Path, *options: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MEMSTREAM_MASTER_KEY=old, APP_ID=APP_ID, KAFKA_BROKER_URL=broker_url)
    env.pop("MASTER_KEY_FILE", None)
    return subprocess.run([sys.executable, "-m", "streams", "keys", "rotate", "--new-key-file",
                           str(new_key_file), *options], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


async def send_misrouted(broker_url: str, user: str) -> None:
    """A turn of `user` on the partition after the user's (a producer that does not hash the key)."""
    turn = make_turn(user, "1", "I adopted a dog named Rex.")
    producer = AIOKafkaProducer(bootstrap_servers=broker_url)
    await producer.start()
    try:
        await producer.send_and_wait(CHAT_TURNS, turn.model_dump_json().encode(), key=user.encode(),
                                     partition=(partition_for(user, PARTITIONS) + 1) % PARTITIONS)
    finally:
        await producer.stop()


def summaries(api_url: str, user: str) -> list[str]:
    return sorted(m["summary"] for m in asyncio.run(memories(api_url, user)))


def test_misrouted_turns_make_no_key_and_a_rotation_moves_every_key_to_the_new_master(tmp_path):
    old, new = encode_key(new_key()), encode_key(new_key())
    new_file = tmp_path / "new-master-key"
    new_file.write_text(new + "\n")
    users = [unique_user("rot") for _ in PETS]
    stray = unique_user("stray")
    with EmbeddedBroker(log_path=tmp_path / "broker.log") as broker:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        worker = Worker(broker.url, tmp_path / "data", APP_ID, tmp_path / "worker.log",
                        env={**NO_LIFECYCLE, "MEMSTREAM_MASTER_KEY": old}).start()
        try:
            turns = [make_turn(u, "1", f"I adopted a dog named {pet}.") for u, pet in zip(users, PETS)]
            asyncio.run(produce(broker.url, turns))
            asyncio.run(wait_processed(broker.url, turns, timeout=300))
            before = {u: summaries(worker.api_url, u) for u in users}
            assert all(before.values()), before

            asyncio.run(send_misrouted(broker.url, stray))
            [letter] = asyncio.run(read_all(broker.url, CHAT_TURNS_DLQ,
                                            lambda d: d.get("key") == stray, 1))
            assert letter["reason"] == "wrong_partition" and letter["raw_withheld"]

            refused = rotate(broker.url, old, new_file)
            assert refused.returncode == 1 and "stop every worker" in refused.stderr
        finally:
            worker.stop()

        topic = changelog_topic(APP_ID, "user_keys")
        keys = asyncio.run(read_table(broker.url, topic))
        assert set(users) <= set(keys) and stray not in keys, "no key for the misrouted turn's user"
        configs = asyncio.run(topic_configs(broker.url, topic))
        assert {k: configs.get(k) for k in CHANGELOG_CONFIGS} == CHANGELOG_CONFIGS

        # Tansu keeps listing the stopped worker in the group: the operator says it is stopped.
        assert asyncio.run(group_members(broker.url, APP_ID))
        rotated = rotate(broker.url, old, new_file, "--workers-stopped")
        assert rotated.returncode == 0, rotated.stderr
        assert f"{len(users)} keys re-wrapped" in rotated.stderr

        worker = Worker(broker.url, tmp_path / "data", APP_ID, tmp_path / "worker2.log",
                        env={**NO_LIFECYCLE, "MEMSTREAM_MASTER_KEY": new}, port=worker.port).start()
        try:
            after = {u: summaries(worker.api_url, u) for u in users}
        finally:
            worker.stop()
    assert after == before, "the worker with only the new master key reads every memory"
    assert json.dumps(after).count("adopted a dog") == len(users)
