"""Opening what memstream sealed, for a consumer holding the master key (the CLI, tests).

Users' data keys live, wrapped by the master key, in the `user_keys` table, whose changelog
topic (`<APP_ID>-user_keys-changelog`) carries them. `TopicUnsealer` reads that topic and opens
the events, candidates and dead letters of every user who was not purged; a purged user's stay
sealed for good.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.kafka.highwaters import true_end_offsets
from streams.privacy import table_values
from streams.privacy.crypto import SealError
from streams.privacy.payloads import open_event, open_record
from streams.privacy.sealed import Sealer
from streams.privacy.user_keys import UserKeys
from streams.tools.client import kafka_security
from topics.dlq import DeadLetter
from topics.events import MemoryEvent


T = TypeVar("T")


def _user_of_record(raw: bytes) -> str:
    """The user a sealed record names (its envelope's `user_id`), or "" if none."""
    if table_values.is_packed(raw):
        try:
            return table_values.unpack(raw).user_id
        except SealError:
            return ""
    try:
        value = json.loads(raw)
    except ValueError:
        return ""
    return str(value.get("user_id", "")) if isinstance(value, dict) else ""


def changelog_topic(app_id: str, table: str) -> str:
    """The changelog topic Faust keeps for a table of app `app_id`."""
    return f"{app_id}-{table}-changelog"


async def read_records(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of `topic`, from its start to its current end."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                **kafka_security())
    await consumer.start()
    try:
        await consumer.topics()  # loads every topic's metadata
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not tps:
            return []
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await true_end_offsets(consumer, tps)
        out: list[tuple[bytes | None, bytes | None]] = []
        while await behind(consumer, ends):
            for records in (await consumer.getmany(*tps, timeout_ms=1000)).values():
                out += [(record.key, record.value) for record in records]
        return out
    finally:
        await consumer.stop()


async def read_table(bootstrap: str, topic: str) -> dict[str, Any]:
    """The latest value of every key of a changelog topic, read to its current end."""
    table: dict[str, Any] = {}
    for key, value in await read_records(bootstrap, topic):
        table[(key or b"").decode("utf-8", "replace")] = json.loads(value) if value else None
    return {k: v for k, v in table.items() if v is not None}


async def behind(consumer: AIOKafkaConsumer, ends: dict[TopicPartition, int]) -> bool:
    """Whether any assigned partition's position is still before its end offset."""
    for tp, end in ends.items():
        if await consumer.position(tp) < end:
            return True
    return False


async def changelog_topics(bootstrap: str, table: str) -> list[str]:
    """Every app's changelog topic of `table` on the broker."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                **kafka_security())
    await consumer.start()
    try:
        return sorted(t for t in await consumer.topics() if t.endswith(f"-{table}-changelog"))
    finally:
        await consumer.stop()


class TopicUnsealer:
    """Opens sealed records with the master key and the users' keys read from Kafka: those of
    app `app_id`, or of every app on the broker that shares the master key (`app_id=None`)."""

    def __init__(self, bootstrap: str, app_id: str | None, master_key: bytes) -> None:
        self.bootstrap = bootstrap
        self.app_id = app_id
        self.master_key = master_key
        self.sealer = Sealer(UserKeys({}, master_key))
        self._unopenable: set[str] = set()
        """Users whose records did not open even with the keys read since: not read again for
        each of their records (a topic of thousands of purged users' records would otherwise
        re-read the keys thousands of times)."""

    async def refresh(self) -> None:
        """Read the users' keys again (users seen since the last read)."""
        topics = ([changelog_topic(self.app_id, "user_keys")] if self.app_id
                  else await changelog_topics(self.bootstrap, "user_keys"))
        keys: dict[str, Any] = {}
        for topic in topics:
            keys.update(await read_table(self.bootstrap, topic))
        self.sealer = Sealer(UserKeys(keys, self.master_key))
        self._unopenable.clear()

    async def _opened(self, user_id: str, opens: Callable[[Sealer], T]) -> T | None:
        """`opens(sealer)`, reading the keys again once if the user's do not open it yet; None
        when they still do not (the user was purged, or the key is another master's)."""
        for attempt in range(2):
            try:
                return opens(self.sealer)
            except SealError:
                if attempt == 1 or user_id in self._unopenable:
                    break
                await self.refresh()
        self._unopenable.add(user_id)
        return None

    async def open_event(self, event: MemoryEvent) -> MemoryEvent | None:
        """The event with its content; None when its user's key is gone (purged)."""
        return await self._opened(event.user_id, lambda sealer: open_event(sealer, event))

    async def open_record(self, raw: bytes) -> Any:
        """A sealed record's JSON value (see `streams.privacy.payloads.open_record`); None when
        its user's key is gone."""
        return await self._opened(_user_of_record(raw), lambda sealer: open_record(sealer, raw))

    async def open_dead_letter(self, letter: DeadLetter) -> DeadLetter:
        """The letter with its kept bytes in clear (`raw_b64`) when they open."""
        sealed = letter.raw_sealed
        if sealed is None:
            return letter
        raw_b64 = await self._opened(sealed.user_id, lambda sealer: sealer.open(sealed))
        if raw_b64 is not None:
            return letter.model_copy(update={"raw_b64": raw_b64, "raw_sealed": None})
        return letter
