"""Purge means gone: after `DELETE /v1/users/{id}` nothing of the user's content is readable from
any table, API route, SSE replay, topic memstream writes, or the log — and nothing of another
user's was touched.

Every topic memstream writes is scanned twice: as stored (no user's text is ever there in
clear), and opened with the master key and the users' data keys read from Kafka, as an insider
holding the master key would: the purged user's distinctive words are gone, the other user's
are still there (so the scan could have found them). `chat.turns` is the chat backend's topic,
not memstream's: the backend keeps (and must purge) its own copy.
"""
from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from streams.privacy.crypto import SealError, decode_key
from streams.tools.unseal import TopicUnsealer, read_records
from tests.integration.conftest import (
    MASTER_KEY,
    call,
    make_turn,
    produce,
    read_all,
    unique_user,
    wait_processed,
)
from tests.integration.test_sse import events
from topics.deflated import inflated
from topics.names import CHAT_TURNS, CHAT_TURNS_DLQ, MEMORY_EVENTS, MEMORY_PROGRESS
from streams.privacy import table_values
from topics.sealed import Sealed

pytestmark = pytest.mark.integration
PURGED_WORD, KEPT_WORD = "Zyxwobble", "Quorblat"


async def topic_records(broker_url: str) -> dict[str, list[bytes]]:
    """Every record value of every topic on the broker but the backend's `chat.turns`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=broker_url, enable_auto_commit=False)
    await consumer.start()
    try:
        topics = sorted(t for t in await consumer.topics() if t != CHAT_TURNS and not t.startswith("__"))
    finally:
        await consumer.stop()
    return {topic: [inflated(v) if topic in DEFLATED_TOPICS else v
                    for _, v in await read_records(broker_url, topic) if v] for topic in topics}


DEFLATED_TOPICS = (MEMORY_EVENTS, MEMORY_PROGRESS)
"""Topics whose records may be deflated (`topics.deflated`): read inflated, so what they hold
is looked at, not their zlib bytes."""


def opened_text(value: Any, unsealer: TopicUnsealer, depth: int = 0) -> str:
    """A record's JSON with every sealed part opened (where its key still exists) and every
    base64 string decoded: what an insider holding the master key could read."""
    if depth > 8:
        return str(value)
    if isinstance(value, dict):
        if {"user_id", "sealed"} <= set(value) and set(value) <= {"user_id", "by", "sealed"}:
            try:
                value = unsealer.sealer.open(Sealed.model_validate(value))
            except SealError:
                return "<sealed for good>"
            return opened_text(value, unsealer, depth + 1)
        return " ".join(f"{k} {opened_text(v, unsealer, depth + 1)}" for k, v in value.items())
    if isinstance(value, list):
        return " ".join(opened_text(v, unsealer, depth + 1) for v in value)
    if isinstance(value, str) and len(value) >= 8:
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
            return f"{value} {opened_text(_json_or(decoded), unsealer, depth + 1)}"
        except ValueError:
            return value
    return str(value)


def _json_or(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def record_text(value: bytes, unsealer: TopicUnsealer) -> str:
    """`opened_text` of a record value: a sealed table's binary value (its changelog), or JSON."""
    if table_values.is_packed(value):
        try:
            return opened_text(json.loads(unsealer.sealer.open_stored(table_values.unpack(value))),
                               unsealer)
        except SealError:
            return "<sealed for good>"
    return opened_text(_json_or(value.decode("utf-8", "replace")), unsealer)


def readable(records: dict[str, list[bytes]], unsealer: TopicUnsealer) -> dict[str, str]:
    return {topic: " ".join(record_text(v, unsealer) for v in values)
            for topic, values in records.items()}


def test_after_a_purge_nothing_of_the_user_is_readable_anywhere(worker):
    purged, kept = unique_user("purged"), unique_user("kept")
    turns = [make_turn(purged, "1", f"My parrot {PURGED_WORD} speaks three languages."),
             make_turn(kept, "1", f"My parrot {KEPT_WORD} sings opera every morning.")]

    async def scenario() -> None:
        await produce(worker.broker_url, turns)
        # and a bad record of the purged user, with the word, for the dead-letter topic
        from streams.tools.client import make_producer
        producer = make_producer(worker.broker_url, True)
        await producer.start()
        await producer.send_and_wait(CHAT_TURNS, key=purged.encode(), value=json.dumps(
            {"user_id": purged, "text": f"{PURGED_WORD} again"}).encode())
        await producer.stop()
        await wait_processed(worker.broker_url, turns)
        await read_all(worker.broker_url, CHAT_TURNS_DLQ, lambda d: d.get("key") == purged, 1)
        status, body = await call(worker.api_url, "POST", f"/v1/users/{purged}/blocked-topics?wait=1",
                                  {"topic": PURGED_WORD.lower()})
        assert status == 200, body
        status, listed = await call(worker.api_url, "GET", f"/v1/users/{purged}/memories")
        assert status == 200 and PURGED_WORD in json.dumps(listed), "reachable before the purge"
        [memory] = listed["items"]

        unsealer = TopicUnsealer(worker.broker_url, None, decode_key(MASTER_KEY))
        await unsealer.refresh()
        before = await topic_records(worker.broker_url)
        raw = " ".join(v.decode("utf-8", "replace") for values in before.values() for v in values)
        assert PURGED_WORD not in raw and KEPT_WORD not in raw, "no topic holds a user's text in clear"
        assert PURGED_WORD in " ".join(readable(before, unsealer).values()), "sealed, not absent"

        status, body = await call(worker.api_url, "DELETE", f"/v1/users/{purged}?wait=1")
        assert status == 200, body

        # API routes
        status, listed = await call(worker.api_url, "GET", f"/v1/users/{purged}/memories")
        assert status == 200 and listed["total"] == 0
        status, exported = await call(worker.api_url, "GET", f"/v1/users/{purged}/export")
        assert status == 200 and PURGED_WORD.lower() not in json.dumps(exported).lower()
        status, _ = await call(worker.api_url, "GET", f"/v1/users/{purged}/memories/{memory['id']}/history")
        assert status == 404
        status, answer = await call(worker.api_url, "POST", f"/v1/users/{purged}/query",
                                    {"agent": "it-admin", "query": "parrot", "record_access": False})
        assert PURGED_WORD not in json.dumps(answer)
        # SSE replay: the buffer keeps only content-free purged events
        async with events(worker.api_url, purged, last_event_id="no-such-event") as stream:
            seen = [await stream.next()]
            while seen[-1].get("event") != "memory.purged":
                seen.append(await stream.next())
        assert PURGED_WORD not in json.dumps(seen)

        # every topic memstream writes, opened as far as any key still opens
        await unsealer.refresh()
        after = readable(await topic_records(worker.broker_url), unsealer)
        found = sorted(topic for topic, text in after.items() if PURGED_WORD.lower() in text.lower())
        assert found == [], f"the purged user's words are still readable in {found}"
        assert KEPT_WORD in " ".join(after.values()), "the other user is untouched (and the scan sees)"
        status, listed = await call(worker.api_url, "GET", f"/v1/users/{kept}/memories")
        assert KEPT_WORD in json.dumps(listed)

    asyncio.run(scenario())
    assert PURGED_WORD not in worker.log_path.read_text(errors="replace"), "nor in the log"
