"""What the dead-letter topics hold, for an operator: each dead letter read with where it sits,
when it came, which stage gave up on it and why, and whether it can be re-driven.

A stage's dead letter (`topics.dlq.DeadLetter`, built by `streams.pipeline.dead_letters`)
keeps its record's bytes only when they fit, have no secret and belong to a user: a truncated,
redacted or withheld letter no longer holds the original record and cannot be replayed. The kept
bytes are sealed for the record's user, so they open with the master key only while the user's
data key lives (`streams.tools.unseal.TopicUnsealer`): a purge makes them unreadable, for good.
A sink's dead letter (`topics.sinks_dlq.SinkDeadLetter`) holds the sink's document, not a
record of an input topic: it is listed, never replayed.

The re-drive itself is `streams.tools.redrive`; the commands are `memstream dlq list|replay`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import ValidationError

from streams.app.topology import DLQ_OF, STAGES
from streams.errors import MemstreamError
from streams.kafka.highwaters import true_end_offsets
from streams.pipeline.dead_letters import WITHHELD_REASONS
from streams.tools.client import kafka_security
from streams.tools.unseal import behind
from topics import names
from topics.dlq import DeadLetter
from topics.sinks_dlq import SinkDeadLetter

INPUT_OF: dict[str, str] = {dlq: source for source, dlq in DLQ_OF.items()}
"""The input topic of each stage's dead-letter topic: where its letters are replayed to."""
DLQ_TOPICS: tuple[str, ...] = (*INPUT_OF, names.MEMORY_SINKS_DLQ)
"""Every dead-letter topic, the sinks' included."""
STAGE_OF: dict[str, str] = {stage.dead_letters: stage.name for stage in STAGES
                            if stage.dead_letters is not None}
"""The stage that writes each dead-letter topic."""

REPLAYABLE = "replayable"
NOT_A_DEAD_LETTER = "not_a_dead_letter"
SINK_LETTER = "sink_letter"
UNKNOWN_INPUT = "unknown_input"
WITHHELD = "withheld"
TRUNCATED = "truncated"
REDACTED = "redacted"
EMPTY = "empty"
NO_MASTER_KEY = "no_master_key"
UNREADABLE = "unreadable"


class InvalidSelection(MemstreamError, ValueError):
    """A `--topic`, `--stage`, `--since` or `--until` that names no dead letters: the message
    says what is accepted."""


@dataclass(frozen=True, order=True)
class Where:
    """A record's place: topic, partition, offset (`topic/partition/offset`, as the
    `memstream-replayed-from` header writes it)."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.partition}/{self.offset}"


@dataclass(frozen=True)
class StoredLetter:
    """One record of a dead-letter topic: where it is, when it was written (its Kafka
    timestamp: when the stage dead-lettered the record), its key (the original record's key:
    a stage dead-letters under the record's own key) and the letter it decodes to (None: the
    record is no dead letter of its topic's schema)."""

    where: Where
    at: datetime
    key: bytes | None
    size: int
    letter: DeadLetter | SinkDeadLetter | None

    @property
    def stage(self) -> str:
        if isinstance(self.letter, DeadLetter):
            return self.letter.stage
        return STAGE_OF.get(self.where.topic, "?")

    @property
    def reason(self) -> str:
        """The reason's code: a sink's reason is a code and a detail (`retries_exhausted: …`)."""
        if self.letter is None:
            return NOT_A_DEAD_LETTER
        return self.letter.reason.split(":", 1)[0].strip()

    @property
    def user_id(self) -> str | None:
        if isinstance(self.letter, SinkDeadLetter):
            return self.letter.user_id
        return self.letter.key if self.letter is not None else None

    @property
    def source(self) -> Where | None:
        """Where the record came from (its input topic), for a stage's letter."""
        if not isinstance(self.letter, DeadLetter):
            return None
        return Where(self.letter.topic, self.letter.partition, self.letter.offset)


def decode(where: Where, timestamp_ms: int, key: bytes | None, value: bytes | None) -> StoredLetter:
    """The letter of one dead-letter record, in its topic's schema."""
    schema: type[DeadLetter] | type[SinkDeadLetter] = (
        SinkDeadLetter if where.topic == names.MEMORY_SINKS_DLQ else DeadLetter)
    try:
        letter: DeadLetter | SinkDeadLetter | None = schema.model_validate_json(value or b"")
    except (ValidationError, ValueError):
        letter = None
    at = datetime.fromtimestamp(timestamp_ms / 1000, timezone.utc)
    return StoredLetter(where, at, key, len(value or b""), letter)


def dlq_topics(topics: Sequence[str] = (), stages: Sequence[str] = ()) -> tuple[str, ...]:
    """The dead-letter topics `--topic` (a dead-letter topic or its input topic's name) and
    `--stage` name, both given or not; every one when neither is."""
    chosen = list(DLQ_TOPICS)
    if topics:
        wanted = set()
        for topic in topics:
            dlq = topic if topic in DLQ_TOPICS else DLQ_OF.get(topic)
            if dlq is None:
                raise InvalidSelection(f"no dead-letter topic {topic!r}; one of "
                                       f"{', '.join(DLQ_TOPICS)}, or an input: {', '.join(DLQ_OF)}")
            wanted.add(dlq)
        chosen = [t for t in chosen if t in wanted]
    if stages:
        known = sorted(set(STAGE_OF.values()))
        unknown = [s for s in stages if s not in known]
        if unknown:
            raise InvalidSelection(f"no stage {unknown[0]!r} writes dead letters; one of {', '.join(known)}")
        chosen = [t for t in chosen if STAGE_OF.get(t) in stages]
    if not chosen:
        raise InvalidSelection("the --topic and --stage given share no dead-letter topic")
    return tuple(chosen)


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """A `--since`/`--until` time: ISO 8601 (a time without a zone is UTC), else a phrase
    dateparser reads ("2 hours ago", "yesterday"; relative to `now`)."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        import dateparser  # imported only for a phrase: it costs ~1 s at import

        settings: dict[str, Any] = {"RETURN_AS_TIMEZONE_AWARE": True, "TIMEZONE": "UTC",
                                    "TO_TIMEZONE": "UTC", "PREFER_DATES_FROM": "past"}
        if now is not None:
            settings["RELATIVE_BASE"] = now.astimezone(timezone.utc).replace(tzinfo=None)
        found = dateparser.parse(text, languages=["en"], settings=settings)
        if found is None:
            raise InvalidSelection(f"not a time: {text!r} (ISO 8601, e.g. 2024-05-01T10:00:00Z, "
                                   "or a phrase such as '2 hours ago')") from None
        parsed = found
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Selection:
    """Which dead letters a command takes: from `topics`, and when given, of these reasons
    and stages, written from `since` (included) until `until` (excluded)."""

    topics: tuple[str, ...] = DLQ_TOPICS
    reasons: frozenset[str] = field(default_factory=frozenset)
    stages: frozenset[str] = field(default_factory=frozenset)
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def of(cls, topics: Sequence[str] = (), reasons: Sequence[str] = (), stages: Sequence[str] = (),
           since: str | None = None, until: str | None = None,
           now: datetime | None = None) -> Selection:
        """The selection the options name; raises `InvalidSelection`."""
        start = parse_time(since, now) if since else None
        end = parse_time(until, now) if until else None
        if start is not None and end is not None and start >= end:
            raise InvalidSelection(f"--since ({start.isoformat()}) is not before --until "
                                   f"({end.isoformat()})")
        return cls(dlq_topics(topics, stages), frozenset(reasons), frozenset(stages), start, end)

    def matches(self, stored: StoredLetter) -> bool:
        return (stored.where.topic in self.topics
                and (not self.reasons or stored.reason in self.reasons
                     or (stored.letter is not None and stored.letter.reason in self.reasons))
                and (not self.stages or stored.stage in self.stages)
                and (self.since is None or stored.at >= self.since)
                and (self.until is None or stored.at < self.until))


Progress = Callable[[int, int], None]
"""Told (records read, records to read) as a read goes."""


async def read_dead_letters(bootstrap: str, selection: Selection, *,
                            security: Mapping[str, Any] | None = None,
                            progress: Progress | None = None) -> list[StoredLetter]:
    """Every dead letter of `selection`, read from the start of its topics to their current
    end, in order of topic, partition and offset. Connects as the settings say (`security`:
    aiokafka's connection arguments instead)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                **kafka_security(security))
    try:
        await consumer.start()
        await consumer.topics()  # loads every topic's metadata
        tps = [TopicPartition(topic, p) for topic in selection.topics
               for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not tps:
            if progress is not None:
                progress(0, 0)
            return []
        consumer.assign(tps)
        starts = await consumer.beginning_offsets(tps)
        ends = await true_end_offsets(consumer, tps)
        for tp in tps:
            consumer.seek(tp, starts[tp])
        total = sum(max(ends[tp] - starts[tp], 0) for tp in tps)
        found: list[StoredLetter] = []
        done = 0
        if progress is not None:
            progress(done, total)
        while done < total and await behind(consumer, ends):
            for tp, records in (await consumer.getmany(*tps, timeout_ms=1000)).items():
                for record in records:
                    if record.offset >= ends[tp]:
                        continue  # written after the read began
                    done += 1
                    stored = decode(Where(tp.topic, tp.partition, record.offset),
                                    record.timestamp, record.key, record.value)
                    if selection.matches(stored):
                        found.append(stored)
            if progress is not None:
                progress(done, total)
        return sorted(found, key=lambda s: s.where)
    finally:
        await consumer.stop()


@dataclass(frozen=True)
class Verdict:
    """Whether a dead letter can be replayed: `code` is `REPLAYABLE` or why not, `why` says it
    to a person."""

    code: str
    why: str = ""

    @property
    def replayable(self) -> bool:
        return self.code == REPLAYABLE


class LetterOpener(Protocol):
    """Opens a dead letter's sealed bytes (`streams.tools.unseal.TopicUnsealer`)."""

    async def open_dead_letter(self, letter: DeadLetter) -> DeadLetter: ...


@dataclass(frozen=True)
class Inspected:
    """A dead letter, whether it can be replayed, and its kept bytes when they opened (the
    original record's value when replayable; a user's content: never shown unless asked)."""

    stored: StoredLetter
    verdict: Verdict
    kept: bytes | None = None


def kept_verdict(stored: StoredLetter) -> Verdict | None:
    """Why a letter cannot be replayed whatever its bytes open to; None when nothing bars it."""
    letter = stored.letter
    if letter is None:
        return Verdict(NOT_A_DEAD_LETTER, f"not a dead letter of {stored.where.topic}'s schema")
    if isinstance(letter, SinkDeadLetter):
        return Verdict(SINK_LETTER, "a sink's dead letter holds the sink's document, not a "
                                    "record of an input topic")
    if INPUT_OF.get(stored.where.topic) != letter.topic:
        return Verdict(UNKNOWN_INPUT, f"came from {letter.topic}, which is not the input of "
                                      f"{stored.where.topic}")
    if letter.raw_withheld or (letter.raw_sealed is None and not letter.raw_b64 and letter.raw_size):
        if letter.reason in WITHHELD_REASONS:
            return Verdict(WITHHELD, f"its bytes were not kept: a {letter.reason} letter never keeps them")
        return Verdict(WITHHELD, "its bytes were not kept: no user could be told from the record "
                                 "(no key, a key that is not its user_id, or not its user's partition)")
    if letter.raw_truncated:
        return Verdict(TRUNCATED, f"only part of its {letter.raw_size} bytes was kept")
    if letter.raw_redacted:
        return Verdict(REDACTED, "secrets were replaced in what was kept: not the original bytes")
    if letter.raw_size == 0:
        return Verdict(EMPTY, "the record had no value: replayed, it would only be dead-lettered again")
    return None


async def inspect(stored: StoredLetter, opener: LetterOpener | None) -> Inspected:
    """`stored` judged, its kept bytes opened when `opener` can (a truncated or redacted
    letter's too, for `--show-text`; a withheld one has none)."""
    barred = kept_verdict(stored)
    letter = stored.letter
    if not isinstance(letter, DeadLetter) or (barred is not None and barred.code == WITHHELD):
        return Inspected(stored, barred or Verdict(NOT_A_DEAD_LETTER))
    kept, verdict = await _opened(letter, opener)
    return Inspected(stored, barred or verdict, kept)


async def _opened(letter: DeadLetter, opener: LetterOpener | None) -> tuple[bytes | None, Verdict]:
    """A letter's kept bytes, and whether they open."""
    if letter.raw_sealed is None:
        return letter.raw, Verdict(REPLAYABLE)  # kept in clear: a letter built by a tool
    if opener is None:
        return None, Verdict(NO_MASTER_KEY, "sealed, and no master key is configured here to open it")
    opened = await opener.open_dead_letter(letter)
    if opened.raw_sealed is not None:
        return None, Verdict(UNREADABLE, "sealed with a data key that is gone: its user was "
                                         "purged (or another master key sealed it)")
    return opened.raw, Verdict(REPLAYABLE)


async def inspect_all(letters: Iterable[StoredLetter], opener: LetterOpener | None,
                      progress: Progress | None = None) -> list[Inspected]:
    """Each letter inspected, in order."""
    letters = list(letters)
    out: list[Inspected] = []
    for stored in letters:
        out.append(await inspect(stored, opener))
        if progress is not None:
            progress(len(out), len(letters))
    return out


def summary(inspected: Iterable[Inspected]) -> dict[str, Any]:
    """How many letters, by reason, and how many can be replayed (content-free)."""
    by_reason: dict[str, int] = {}
    not_replayable: dict[str, int] = {}
    count = replayable = 0
    for item in inspected:
        count += 1
        by_reason[item.stored.reason] = by_reason.get(item.stored.reason, 0) + 1
        if item.verdict.replayable:
            replayable += 1
        else:
            not_replayable[item.verdict.code] = not_replayable.get(item.verdict.code, 0) + 1
    return {"count": count, "replayable": replayable,
            "by_reason": dict(sorted(by_reason.items())),
            "not_replayable": dict(sorted(not_replayable.items()))}


def described(item: Inspected) -> dict[str, Any]:
    """A letter as `--json` shows it: where, when, who, why, sizes, whether it replays. No
    content: not the kept bytes, not a sink's document."""
    stored, letter = item.stored, item.stored.letter
    source = stored.source
    return {
        "dlq": stored.where.topic, "partition": stored.where.partition,
        "offset": stored.where.offset, "at": stored.at.isoformat(), "stage": stored.stage,
        "reason": stored.reason,
        "error": letter.error if isinstance(letter, DeadLetter) else (
            letter.reason if letter is not None else ""),
        "topic": source.topic if source else None,
        "source_partition": source.partition if source else None,
        "source_offset": source.offset if source else None,
        "user_id": stored.user_id,
        "ref": letter.ref if isinstance(letter, DeadLetter) else None,
        "sink": letter.sink if isinstance(letter, SinkDeadLetter) else None,
        "raw_size": letter.raw_size if isinstance(letter, DeadLetter) else None,
        "size": stored.size,
        "replayable": item.verdict.replayable,
        "why_not": None if item.verdict.replayable else item.verdict.code,
        "why_not_text": None if item.verdict.replayable else item.verdict.why,
    }

