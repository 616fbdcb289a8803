"""Hostile input at volume: 10,000+ bad records of every class, on every input topic, into a
running worker. Nothing crashes or restarts, every bad record is counted in
`memstream_dlq_records_total` and is in its dead-letter topic (found by its SHA-256: a letter
keeps at most an excerpt), and a valid turn sent afterwards becomes a memory.
"""
from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections import Counter

import aiohttp
import pytest
from aiokafka import AIOKafkaProducer

from streams.pipeline.dead_letters import digest_key, raw_digest
from streams.privacy.crypto import decode_key
from tests.integration.conftest import (
    MASTER_KEY,
    Worker,
    auth_headers,
    make_turn,
    produce,
    read_all,
    unique_user,
    wait_processed,
)
from topics.names import (
    CHAT_TURNS,
    CHAT_TURNS_DLQ,
    MEMORY_CANDIDATES,
    MEMORY_CANDIDATES_DLQ,
    MEMORY_COMMANDS,
    MEMORY_COMMANDS_DLQ,
)

pytestmark = pytest.mark.integration
PER_CLASS = 1300  # x 8 classes on chat.turns, plus commands and candidates: > 10,000 records
BIG_TEXTS = 24  # 2 MB each: enough to prove the point without filling the broker's memory
DIGEST_KEY = digest_key(decode_key(MASTER_KEY))
"""Dead letters name their record by its HMAC under a key derived from the workers' master key."""


def hostile_turns(user: str, rng: random.Random) -> dict[str, list[bytes]]:
    """Bad `chat.turns` values by class (the classes of issue 11)."""
    good = make_turn(user, "x", "I adopted a dog named Luna.").model_dump(mode="json")

    def with_(**fields: object) -> bytes:
        return json.dumps({**good, **fields}).encode()

    def without(name: str) -> bytes:
        return json.dumps({k: v for k, v in good.items() if k != name}).encode()

    fields = ["user_id", "thread_id", "turn_id", "role", "text", "ts"]
    return {
        "random_bytes": [rng.randbytes(rng.randint(1, 400)) for _ in range(PER_CLASS)],
        "truncated_json": [with_(turn_id=str(i))[: rng.randint(1, 60)] for i in range(PER_CLASS)],
        "missing_fields": [without(fields[i % len(fields)]) for i in range(PER_CLASS)],
        "wrong_types": [with_(**{fields[i % len(fields)]: [i, {"x": None}]}) for i in range(PER_CLASS)],
        "utf16": [with_(turn_id=f"u{i}").decode().encode("utf-16") for i in range(PER_CLASS)],
        "json_arrays": [json.dumps([good, i]).encode() for i in range(PER_CLASS)],
        "zoneless_times": [with_(turn_id=f"z{i}", ts="2024-05-01T10:00:00") for i in range(PER_CLASS)],
        "huge_texts": [with_(turn_id=f"h{i}", text="x" * 2_000_000) for i in range(BIG_TEXTS)],
    }


def hostile_internal(user: str, rng: random.Random) -> dict[str, list[bytes]]:
    """Bad records on memory.commands and on the internal memory.candidates."""
    return {
        MEMORY_COMMANDS: [rng.choice([rng.randbytes(50), b'{"kind": "delete"}', b"[]",
                                      json.dumps({"command_id": str(i), "kind": "edit",
                                                  "user_id": user, "ts": "2024-05-01T10:00:00Z",
                                                  "memory_id": "nope", "text": "x"}).encode()])
                          for i in range(600)],
        MEMORY_CANDIDATES: [rng.choice([rng.randbytes(50), b'{"turn": 3}', b"null",
                                        json.dumps({"user_id": user, "sealed": "AAAA"}).encode()])
                            for _ in range(400)],
    }


async def send_all(broker_url: str, user: str, records: dict[str, list[bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=broker_url, max_batch_size=1, linger_ms=0,
                                max_request_size=4 * 1024 * 1024, enable_idempotence=False)
    await producer.start()
    try:
        futures = [await producer.send(topic, key=user.encode(), value=value)
                   for topic, values in records.items() for value in values]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def dlq_counts(api_url: str) -> float:
    async with aiohttp.ClientSession(headers=auth_headers()) as session:
        async with session.get(api_url + "/metrics") as response:
            text = await response.text()
    return sum(float(v) for v in re.findall(r"^memstream_dlq_records_total\{[^}]*\} (\S+)$", text, re.M))


async def stored(api_url: str, user: str) -> list[dict]:
    async with aiohttp.ClientSession(headers=auth_headers()) as session:
        async with session.get(f"{api_url}/v1/users/{user}/memories") as response:
            return (await response.json())["items"]


def test_ten_thousand_hostile_records_stop_nothing(broker, tmp_path):
    worker = Worker(broker.url, tmp_path / "data", "memstream-flood", tmp_path / "worker.log").start()
    try:
        rng = random.Random(11)
        user = unique_user("flood")
        turns = hostile_turns(user, rng)
        internal = hostile_internal(user, rng)
        sent = {CHAT_TURNS: [v for values in turns.values() for v in values], **internal}
        class_of = {raw_digest(DIGEST_KEY, v): name for name, values in turns.items() for v in values}
        total = sum(len(v) for v in sent.values())
        assert total >= 10_000
        pid = worker.proc.pid

        async def scenario() -> None:
            counted_before = await dlq_counts(worker.api_url)
            await send_all(broker.url, user, sent)
            valid = make_turn(user, "after", "I adopted a cat named Mia.", ts="2024-05-02T10:00:00+00:00")
            await produce(broker.url, [valid])
            await wait_processed(broker.url, [valid], timeout=900)
            for topic, dlq in ((CHAT_TURNS, CHAT_TURNS_DLQ), (MEMORY_COMMANDS, MEMORY_COMMANDS_DLQ),
                               (MEMORY_CANDIDATES, MEMORY_CANDIDATES_DLQ)):
                hashes = {raw_digest(DIGEST_KEY, v) for v in sent[topic]}
                # at-least-once: a record may be dead-lettered twice; wait for every distinct one
                letters = await read_all(broker.url, dlq, lambda d: d["raw_hmac"] in hashes,
                                         len(hashes), timeout=900,
                                         done=lambda got: {d["raw_hmac"] for d in got} >= hashes)
                missing = hashes - {d["raw_hmac"] for d in letters}
                assert not missing, (f"bad records of {topic} not dead-lettered, by class: "
                                     f"{Counter(class_of.get(h, topic) for h in missing)}")
                assert all(len(json.dumps(d)) < 1_000_000 for d in letters), "within the producer limit"
            # The session's other workers (other app ids) read chat.turns too and dead-letter
            # the same records into the same topics: the letters can all be there before this
            # worker has counted its own. Wait for its count.
            deadline = time.monotonic() + 900
            while (counted := await dlq_counts(worker.api_url) - counted_before) < total:
                assert time.monotonic() < deadline, f"counted {counted} of {total} dead letters"
                await asyncio.sleep(1)
            # The valid turn's fact lands through memory.candidates, consumed apart from
            # chat.turns (and `wait_processed` may have seen another group's progress): wait
            # for this worker to store it.
            while not (memories := await stored(worker.api_url, user)):
                assert time.monotonic() < deadline, "the valid turn's memory never landed"
                await asyncio.sleep(0.5)
            assert [m["summary"] for m in memories] == ["Ana adopted a cat named Mia."]

        asyncio.run(scenario())
        assert worker.proc.poll() is None and worker.proc.pid == pid, "the worker never stopped"
        log = worker.log_path.read_text(errors="replace")
        assert "crashed" not in log.lower() and "Traceback" not in log
    finally:
        worker.stop()
