"""Re-driving dead letters: each replayable letter's record sent back to its input topic, so it
goes through its stage again (`memstream dlq replay`).

A record goes back as it came: the same key, the same value bytes (the opened kept bytes: only a
letter that kept them whole, unredacted, and still opens is replayed, `streams.tools.dead_letters`).
A dead letter does not keep the record's headers, so the record carries one header only,
`memstream-replayed-from: <dlq topic>/<partition>/<offset>`, naming the letter it came from:
the stages ignore headers, and whoever reads the input topic can tell a re-drive from the
producer's record.

The tool keeps no state of what it replayed, and needs none: a record replayed again changes
nothing, the pipeline being at least once with deterministic ids (ingest's turn log knows a turn
id it has taken, dedup's and commands' `applied` records a candidate or a command id). Within
one run, letters holding the same record (same input topic, key and bytes — a replayed record
that fails again makes a second letter of it) send it once: the others are `duplicate`s, so
letters that keep failing do not multiply with each run.

Records go back in the order they had on their input topic, partition by partition: a user's
turns are said again in the order they were first said.
"""
from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from streams.tools.client import make_producer
from streams.tools.dead_letters import INPUT_OF, Inspected, Where

REPLAYED_FROM = "memstream-replayed-from"
"""The header of a replayed record: the dead letter it came from (`topic/partition/offset`)."""

REPLAYED = "replayed"
WOULD_REPLAY = "would_replay"
DUPLICATE = "duplicate"
SKIPPED = "skipped"


class Sender(Protocol):
    """Sends one record; the awaitable resolves to where it was written."""

    async def send(self, topic: str, key: bytes | None, value: bytes,
                   headers: list[tuple[str, bytes]]) -> Awaitable[Where]: ...


class ProducerSender:
    """A `Sender` on the tools' producer (`streams.tools.client.make_producer`: acks from every
    in-sync replica, the settings' connection). Use `async with`."""

    def __init__(self, bootstrap: str, one_record_batches: bool = False,
                 security: Mapping[str, Any] | None = None) -> None:
        self._producer = make_producer(bootstrap, one_record_batches, security)

    async def __aenter__(self) -> ProducerSender:
        await self._producer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._producer.stop()

    async def send(self, topic: str, key: bytes | None, value: bytes,
                   headers: list[tuple[str, bytes]]) -> Awaitable[Where]:
        delivery = await self._producer.send(topic, value=value, key=key, headers=headers)

        async def written() -> Where:
            meta = await delivery
            return Where(meta.topic, meta.partition, meta.offset)

        return written()


@dataclass(frozen=True)
class Outcome:
    """What became of one dead letter: replayed (or, in a dry run, would be), a duplicate of
    another letter replayed in the same run, or skipped (`why`: the verdict's code)."""

    item: Inspected
    action: str
    why: str = ""
    sent_to: Where | None = None
    duplicate_of: Where | None = None

    def described(self) -> dict[str, Any]:
        """For `--json`: the letter's place, what was done, and where it went. No content."""
        where = self.item.stored.where
        return {"dlq": where.topic, "partition": where.partition, "offset": where.offset,
                "reason": self.item.stored.reason, "user_id": self.item.stored.user_id,
                "action": self.action, "why": self.why or None,
                "why_text": self.item.verdict.why or None,
                "sent_to": str(self.sent_to) if self.sent_to else None,
                "duplicate_of": str(self.duplicate_of) if self.duplicate_of else None}


def _record_id(item: Inspected) -> tuple[str, bytes | None, str]:
    """What makes two letters the same record: input topic, key, and the bytes' digest."""
    return (INPUT_OF[item.stored.where.topic], item.stored.key,
            hashlib.sha256(item.kept or b"").hexdigest())


def _replay_order(item: Inspected) -> tuple[Any, ...]:
    source = item.stored.source
    return (source is None, source or item.stored.where, item.stored.where)


def plan(items: Iterable[Inspected]) -> list[tuple[Inspected, Where | None]]:
    """The letters in the order their records are sent back (their input topic's order), each
    with the letter it duplicates (None: the first letter of its record, or not replayable)."""
    first: dict[tuple[str, bytes | None, str], Where] = {}
    planned: list[tuple[Inspected, Where | None]] = []
    for item in sorted(items, key=_replay_order):
        if not item.verdict.replayable:
            planned.append((item, None))
            continue
        record = _record_id(item)
        planned.append((item, first.get(record)))
        first.setdefault(record, item.stored.where)
    return planned


async def replay(items: Iterable[Inspected], sender: Sender | None,
                 progress: Callable[[int, int], None] | None = None) -> list[Outcome]:
    """Send each replayable letter's record back to its input topic (`sender` None: a dry run,
    nothing is sent); every letter's outcome, in the order of `plan`."""
    planned = plan(items)
    outcomes: list[Outcome] = []
    pending: list[tuple[int, Awaitable[Where]]] = []
    for item, duplicate_of in planned:
        if not item.verdict.replayable:
            outcomes.append(Outcome(item, SKIPPED, item.verdict.code))
        elif duplicate_of is not None:
            outcomes.append(Outcome(item, DUPLICATE, DUPLICATE, duplicate_of=duplicate_of))
        elif sender is None:
            outcomes.append(Outcome(item, WOULD_REPLAY))
        else:
            header = str(item.stored.where).encode()
            pending.append((len(outcomes), await sender.send(
                INPUT_OF[item.stored.where.topic], item.stored.key, item.kept or b"",
                [(REPLAYED_FROM, header)])))
            outcomes.append(Outcome(item, REPLAYED))
        if progress is not None:
            progress(len(outcomes), len(planned))
    written = await asyncio.gather(*(delivery for _, delivery in pending))
    for (index, _), where in zip(pending, written):
        outcomes[index] = Outcome(outcomes[index].item, REPLAYED, sent_to=where)
    return outcomes


def tally(outcomes: Iterable[Outcome]) -> dict[str, Any]:
    """How many letters were replayed (or would be), duplicates, and skipped by why."""
    counts: dict[str, Any] = {REPLAYED: 0, WOULD_REPLAY: 0, DUPLICATE: 0, SKIPPED: {}}
    for outcome in outcomes:
        if outcome.action == SKIPPED:
            counts[SKIPPED][outcome.why] = counts[SKIPPED].get(outcome.why, 0) + 1
        else:
            counts[outcome.action] += 1
    counts[SKIPPED] = dict(sorted(counts[SKIPPED].items()))
    return counts
