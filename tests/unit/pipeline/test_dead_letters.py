"""Dead letters fit the broker, never carry a detected secret in clear, and a failure to send
one never stops the stage: the partition moves on."""
from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timedelta, timezone

from streams.settings import Settings
from streams.observability import metrics
from streams.pipeline.dead_letters import dead_letter_of, digest_key, raw_digest
from streams.app.inprocess import InProcessPipeline
from streams.pipeline.outputs import Outputs
from streams.pipeline.records import Record
from streams.privacy.crypto import new_key
from streams.privacy.sealed import Sealer
from streams.privacy.user_keys import UserKeys
from topics import names
from topics.dlq import DeadLetter
from topics.turns import Turn

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def record(value: bytes, topic: str = names.CHAT_TURNS, key: bytes | None = b"ana") -> Record:
    return Record(topic, 0, 41, key, value)


def sealer(master_key: bytes | None = None) -> Sealer:
    return Sealer(UserKeys({}, master_key or new_key()))


def test_the_kept_bytes_are_sealed_for_the_records_user_or_withheld_when_there_is_none():
    seal = sealer()
    raw = b'{"user_id": "ana", "text": "I adopted Luna", "ts": 3}'
    letter = dead_letter_of(record(raw), "ingest", "invalid_schema", "ts", 4096, seal)
    assert letter.raw_sealed is not None and not letter.raw_b64 and b"Luna" not in letter.model_dump_json().encode()
    assert base64.b64decode(seal.open(letter.raw_sealed)) == raw
    anonymous = dead_letter_of(record(b"\xff garbage", key=None), "ingest", "not_utf8", "x", 4096, seal)
    assert anonymous.raw_withheld and anonymous.raw_sealed is None and not anonymous.raw_b64
    assert anonymous.raw_size == len(b"\xff garbage") and anonymous.raw_hmac


def test_the_digest_of_a_record_is_keyed_by_the_master_key():
    """An unkeyed hash of a short turn confirms a guess of it to anyone who reads the DLQ, even
    after the user's purge; the HMAC confirms it only to whoever holds the master key."""
    master = new_key()
    raw = b'{"user_id": "ana", "text": "I am pregnant", "ts": 3}'
    letter = dead_letter_of(record(raw), "ingest", "invalid_schema", "ts", 4096, sealer(master))
    assert letter.raw_hmac == raw_digest(digest_key(master), raw)
    assert letter.raw_hmac != hashlib.sha256(raw).hexdigest() and not letter.raw_sha256
    other = dead_letter_of(record(raw), "ingest", "invalid_schema", "ts", 4096, sealer(new_key()))
    assert other.raw_hmac != letter.raw_hmac, "another master key, another digest"
    assert digest_key(master) != master


def test_a_record_too_large_keeps_a_marked_excerpt_with_its_size():
    raw = b"x" * 2_000_000
    letter = dead_letter_of(record(raw), "ingest", "oversized", "2000000 bytes", max_raw_bytes=4096)
    assert letter.raw_truncated and not letter.raw_redacted
    assert letter.raw == raw[:4096]
    assert letter.raw_size == len(raw)
    assert len(letter.model_dump_json()) < 10_000, "the letter fits a producer request easily"


def test_a_record_that_fits_is_kept_byte_for_byte():
    raw = b'{"user_id": "ana", "text": \xff\xfe broken'
    letter = dead_letter_of(record(raw), "ingest", "not_utf8", "invalid UTF-8", max_raw_bytes=4096)
    assert letter.raw == raw and not letter.raw_truncated and not letter.raw_redacted


def test_a_detected_secret_is_never_kept_in_clear():
    raw = json.dumps({"user_id": "ana", "text": f"my key is {AWS_KEY}", "ts": "bad"}).encode()
    letter = dead_letter_of(record(raw), "ingest", "invalid_schema", "ts: datetime", max_raw_bytes=4096)
    assert letter.raw_redacted and AWS_KEY not in letter.model_dump_json()
    assert AWS_KEY not in letter.raw.decode() and "my key is" in letter.raw.decode()
    master = new_key()
    sealed = dead_letter_of(record(raw), "ingest", "invalid_schema", "ts", 4096, sealer(master))
    assert sealed.raw_hmac == raw_digest(digest_key(master), raw), "the original can be matched"


async def test_a_dead_letter_that_cannot_be_sent_is_counted_and_never_raises():
    async def broken(topic: str, key: bytes | None, value: bytes) -> None:
        raise RuntimeError("MessageSizeTooLargeError: the broker said no")

    before = metrics.DLQ_FAILURES.labels(stage="ingest", reason="oversized")._value.get()
    sent = await Outputs(broken, sealer()).dead_letter(record(b"x" * 100), "ingest", "oversized",
                                                      "too big")
    assert sent is False
    assert metrics.DLQ_FAILURES.labels(stage="ingest", reason="oversized")._value.get() == before + 1


def turn(turn_id: str, text: str, ts: datetime) -> bytes:
    return Turn(user_id="ana", thread_id="t1", turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts=ts).model_dump_json().encode()


def letters(pipeline: InProcessPipeline, topic: str) -> list[DeadLetter]:
    return [DeadLetter.model_validate_json(r.value or b"") for r in pipeline.topics.sent[topic]]


async def test_hostile_records_are_dead_lettered_and_the_turn_after_them_becomes_a_memory(
        tmp_path, minilm_embedder):
    settings = Settings(table_store="memory://", data_dir=tmp_path, dlq_max_raw_bytes=4096)
    pipeline = InProcessPipeline(settings, minilm_embedder)
    now = datetime.now(timezone.utc)
    hostile = [
        b"\x00\xff" * 1000,                                               # random bytes
        turn("1", "I adopted a dog", now)[:40],                           # truncated JSON
        b'{"user_id": "ana"}',                                            # missing fields
        b"[1, 2, 3]",                                                     # a JSON array
        "{\"user_id\": \"ana\"}".encode("utf-16"),                        # UTF-16
        b"[" * 100_000,                                                   # nesting too deep
        turn("2", "x" * 2_000_000, now),                                  # a 2 MB text
        turn("3", "I moved to Mars.", now + timedelta(days=400)),         # far in the future
    ]
    for raw in hostile:
        await pipeline.topics.send(names.CHAT_TURNS, b"ana", raw)
    await pipeline.topics.send(names.CHAT_TURNS, b"ana", turn("4", "I adopted a dog named Luna.", now))
    await pipeline.deliver()
    dead = letters(pipeline, names.CHAT_TURNS_DLQ)
    assert len(dead) == len(hostile)
    assert {d.reason for d in dead} >= {"not_utf8", "malformed_json", "invalid_schema",
                                        "oversized", "future_event_time"}
    assert all(len(json.dumps(d.model_dump())) < 20_000 for d in dead)
    assert [m.summary for m in pipeline.store.user_memories("ana")] == [
        "Ana adopted a dog named Luna."]


async def test_a_stored_document_that_no_longer_validates_fails_no_batch(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    pipeline.tables.memories["broken"] = {"id": "broken", "user_id": "ana", "summary": 3}
    now = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
    await pipeline.ingest([Turn.model_validate_json(turn("1", "I adopted a dog named Luna.", now))])
    assert [m.summary for m in pipeline.store.user_memories("ana")] == ["Ana adopted a dog named Luna."]
    assert pipeline.outcomes() == {"created": 1}


async def test_a_failing_batch_embedding_falls_back_to_one_record_at_a_time(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    real = pipeline.dedup_stage.embed

    calls = []

    async def flaky(texts):  # fails for the batch's call, works for each candidate's
        calls.append(texts)
        if len(calls) == 1:
            raise RuntimeError("embedder out of memory")
        return await real(texts)

    pipeline.dedup_stage.embed = flaky
    pipeline.ingest_stage.embed = None  # so dedup embeds the candidates itself
    now = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
    turns = [Turn.model_validate_json(turn(str(i), text, now)) for i, text in enumerate(
        ["I adopted a dog named Luna.", "I work as a nurse in Lisbon."])]
    await pipeline.ingest(turns)
    assert pipeline.outcomes() == {"created": 2}
    assert len(calls) == 3, "the batch's call, then one for each candidate"

