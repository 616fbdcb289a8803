"""Reading the dead-letter topics for `memstream dlq`: each letter decoded with where and when it
was written, selected by topic, reason, stage and time, and judged replayable only when it kept
its record whole and the record still opens (streams/tools/dead_letters.py)."""
from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from streams.pipeline.dead_letters import dead_letter_of
from streams.pipeline.records import Record
from streams.privacy.crypto import new_key
from streams.privacy.sealed import Sealer
from streams.privacy.user_keys import UserKeys
from streams.tools import dead_letters as dl
from streams.tools.dead_letters import (
    InvalidSelection,
    Selection,
    StoredLetter,
    Where,
    decode,
    described,
    dlq_topics,
    inspect,
    parse_time,
    summary,
)
from streams.tools.unseal import TopicUnsealer
from topics import names
from topics.dlq import DeadLetter
from topics.sinks_dlq import SinkDeadLetter

AT = datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)
TURN = json.dumps({"user_id": "ana", "thread_id": "t1", "turn_id": "7", "role": "user",
                   "text": "I adopted a dog named Luna.", "ts": "2024-05-01T10:00:00+00:00"}).encode()
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def stored(letter: DeadLetter | SinkDeadLetter | bytes, topic: str = names.CHAT_TURNS_DLQ,
           at: datetime = AT, key: bytes | None = b"ana", offset: int = 0) -> StoredLetter:
    value = letter if isinstance(letter, bytes) else letter.model_dump_json().encode()
    return decode(Where(topic, 0, offset), int(at.timestamp() * 1000), key, value)


def letter_of(raw: bytes, sealer: Sealer | None, reason: str = "oversized_text", key: bytes | None = b"ana",
              topic: str = names.CHAT_TURNS, stage: str = "ingest", max_raw: int = 4096) -> DeadLetter:
    return dead_letter_of(Record(topic, 0, 41, key, raw), stage, reason, "text has 27 chars > limit 10",
                          max_raw, sealer, ref="t1:7")


def opener(sealer: Sealer) -> TopicUnsealer:
    """The CLI's opener with the keys of `sealer` (instead of those it reads from Kafka)."""
    unsealer = TopicUnsealer("unused:9092", "memstream", sealer.keys.master_key)
    unsealer.sealer = sealer

    async def no_refresh() -> None:
        return None

    unsealer.refresh = no_refresh  # type: ignore[method-assign]
    return unsealer


@pytest.fixture
def sealer() -> Sealer:
    return Sealer(UserKeys({}, new_key()))


def test_a_letter_is_decoded_with_where_and_when_it_was_written():
    s = stored(letter_of(TURN, None), offset=5)
    assert s.where == Where(names.CHAT_TURNS_DLQ, 0, 5) and str(s.where) == "chat.turns.dlq/0/5"
    assert s.at == AT and s.stage == "ingest" and s.reason == "oversized_text"
    assert s.user_id == "ana" and s.source == Where(names.CHAT_TURNS, 0, 41)
    sink = stored(SinkDeadLetter(sink="opensearch", key="m1", reason="retries_exhausted: 503",
                                 op="upsert", user_id="ana", record={}), names.MEMORY_SINKS_DLQ)
    assert (sink.stage, sink.reason, sink.user_id, sink.source) == ("sinks", "retries_exhausted", "ana", None)
    junk = stored(b"\xff not json", names.MEMORY_COMMANDS_DLQ)
    assert junk.letter is None and junk.reason == dl.NOT_A_DEAD_LETTER and junk.stage == "commands"


def test_topics_are_named_by_the_dead_letter_topic_or_its_input_and_narrowed_by_stage():
    assert dlq_topics() == (names.CHAT_TURNS_DLQ, names.MEMORY_CANDIDATES_DLQ,
                            names.MEMORY_COMMANDS_DLQ, names.MEMORY_SINKS_DLQ)
    assert dlq_topics([names.CHAT_TURNS, names.MEMORY_COMMANDS_DLQ]) == (
        names.CHAT_TURNS_DLQ, names.MEMORY_COMMANDS_DLQ)
    assert dlq_topics(stages=["dedup"]) == (names.MEMORY_CANDIDATES_DLQ,)
    with pytest.raises(InvalidSelection, match="no dead-letter topic 'memory.events'"):
        dlq_topics(["memory.events"])
    with pytest.raises(InvalidSelection, match="no stage 'sse'"):
        dlq_topics(stages=["sse"])
    with pytest.raises(InvalidSelection, match="share no dead-letter topic"):
        dlq_topics([names.CHAT_TURNS], ["dedup"])


def test_times_are_iso_8601_in_utc_without_a_zone_or_a_phrase():
    assert parse_time("2024-05-01T12:00:00+02:00") == AT
    assert parse_time("2024-05-01T10:00:00") == AT and parse_time("2024-05-01T10:00Z") == AT
    now = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    assert parse_time("2 hours ago", now) == AT
    with pytest.raises(InvalidSelection, match="not a time"):
        parse_time("the other day, maybe", now)
    with pytest.raises(InvalidSelection, match="is not before --until"):
        Selection.of(since="2024-05-02", until="2024-05-01")


def test_a_selection_takes_reasons_stages_and_a_half_open_time_range():
    early, late = stored(letter_of(TURN, None), at=AT), stored(letter_of(TURN, None), at=AT + timedelta(hours=1))
    window = Selection.of(since=AT.isoformat(), until=(AT + timedelta(hours=1)).isoformat())
    assert window.matches(early) and not window.matches(late)
    assert Selection.of(reasons=["oversized_text"]).matches(early)
    assert not Selection.of(reasons=["internal_error"]).matches(early)
    assert not Selection.of(stages=["commands"]).matches(early)
    assert not Selection.of(topics=[names.MEMORY_COMMANDS]).matches(early)
    sink = stored(SinkDeadLetter(sink="s3vectors", key="m1", reason="retries_exhausted: timeout",
                                 op="upsert", user_id="ana", record={}), names.MEMORY_SINKS_DLQ)
    assert Selection.of(reasons=["retries_exhausted"]).matches(sink), "a sink's reason by its code"


async def test_a_sealed_letter_that_opens_replays_the_original_bytes(sealer):
    item = await inspect(stored(letter_of(TURN, sealer)), opener(sealer))
    assert item.verdict.replayable and item.kept == TURN
    clear = await inspect(stored(letter_of(TURN, None)), None)  # a letter a tool built in clear
    assert clear.verdict.replayable and clear.kept == TURN


@pytest.mark.parametrize("make, code", [
    (lambda s: letter_of(TURN + b" " * 2000, s, max_raw=1024), dl.TRUNCATED),
    (lambda s: letter_of(TURN.replace(b"Luna", AWS_KEY.encode()), s), dl.REDACTED),
    (lambda s: letter_of(TURN, s, key=None, reason="missing_key"), dl.WITHHELD),
    (lambda s: letter_of(TURN, s, reason="purged_user"), dl.WITHHELD),
    (lambda s: letter_of(b"", s, reason="empty"), dl.EMPTY),
    (lambda s: letter_of(TURN, s, topic=names.MEMORY_COMMANDS), dl.UNKNOWN_INPUT),
], ids=["truncated", "redacted", "keyless", "purged_user", "empty", "another_input"])
async def test_a_letter_without_its_whole_record_is_not_replayable(sealer, make, code):
    letter = make(sealer)
    item = await inspect(stored(letter, key=b"ana" if letter.key else None), opener(sealer))
    assert not item.verdict.replayable and item.verdict.code == code and item.verdict.why
    if code in (dl.TRUNCATED, dl.REDACTED):
        assert item.kept, "still opened, for --show-text"


async def test_after_the_users_purge_a_letter_is_unreadable_and_without_a_master_key_sealed(sealer):
    letter = letter_of(TURN, sealer)
    sealer.keys.shred("ana", AT)
    purged = await inspect(stored(letter), opener(sealer))
    assert purged.verdict.code == dl.UNREADABLE and purged.kept is None
    assert "purged" in purged.verdict.why
    no_key = await inspect(stored(letter), None)
    assert no_key.verdict.code == dl.NO_MASTER_KEY and no_key.kept is None


async def test_sink_letters_and_foreign_records_are_listed_never_replayed(sealer):
    sink = await inspect(stored(SinkDeadLetter(sink="opensearch", key="m1", reason="mapping", op="upsert",
                                               user_id="ana", record={}), names.MEMORY_SINKS_DLQ), opener(sealer))
    junk = await inspect(stored(b"[1, 2]"), opener(sealer))
    assert (sink.verdict.code, junk.verdict.code) == (dl.SINK_LETTER, dl.NOT_A_DEAD_LETTER)


async def test_what_is_described_holds_no_content_and_the_summary_counts_by_reason(sealer):
    items = [await inspect(stored(letter_of(TURN, sealer), offset=i), opener(sealer)) for i in range(2)]
    items.append(await inspect(stored(letter_of(TURN, sealer, key=None, reason="missing_key"), key=None,
                                      offset=2), opener(sealer)))
    shown = json.dumps([described(item) for item in items])
    assert "Luna" not in shown and base64.b64encode(TURN).decode() not in shown
    first = described(items[0])
    assert first | {"at": None} == first | {
        "dlq": names.CHAT_TURNS_DLQ, "partition": 0, "offset": 0, "at": None, "stage": "ingest",
        "reason": "oversized_text", "topic": names.CHAT_TURNS, "source_partition": 0,
        "source_offset": 41, "user_id": "ana", "ref": "t1:7", "raw_size": len(TURN),
        "replayable": True, "why_not": None}
    assert described(items[2])["why_not"] == dl.WITHHELD
    assert summary(items) == {"count": 3, "replayable": 2,
                              "by_reason": {"missing_key": 1, "oversized_text": 2},
                              "not_replayable": {"withheld": 1}}


class Made(Exception):
    """Raised by the stand-in consumer once it has seen its arguments."""


async def test_the_reader_connects_with_the_settings_security(monkeypatch):
    secure = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512"}
    seen: list[dict[str, Any]] = []

    def stand_in(*args: Any, **kwargs: Any) -> None:
        seen.append(kwargs)
        raise Made

    monkeypatch.setattr("streams.kafka.security.client_kwargs", lambda settings: dict(secure))
    monkeypatch.setattr(dl, "AIOKafkaConsumer", stand_in)
    with pytest.raises(Made):
        await dl.read_dead_letters("kafka:9093", Selection())
    assert seen and seen[0].items() >= secure.items()
