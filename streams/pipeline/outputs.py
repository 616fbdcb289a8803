"""What the stages send, and where. Every record is keyed by user_id (docs/architecture.md#topics).

A stage never talks to Kafka itself: it sends through `Outputs`, whose `send` is the worker's
producer (`streams.app.factory`) or, in process, a set of queues (`streams.app.inprocess`);
both build it the same way (`streams.app.stage_kit`).
"""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar

from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.pipeline.dead_letters import dead_letter_of
from streams.pipeline.records import Record
from streams.privacy.payloads import seal_command, seal_event
from streams.privacy.sealed import Sealer
from topics import names
from topics.candidates import MAX_ITEMS_PER_RECORD
from topics.commands import Command
from topics.events import MemoryEvent
from topics.proactivity import ProactivityCandidate
from topics.progress import PROGRESS_RECORD, TurnProgress

log = logging.getLogger(__name__)

Sender = Callable[[str, bytes | None, bytes], Awaitable[None]]
"""send(topic, key, value): produce one record."""

_HELD_PROGRESS: ContextVar[dict[str, list[TurnProgress]] | None] = ContextVar(
    "held_progress", default=None)
"""The progress entries of the batch the current task is processing, by user
(`Outputs.progress_per_batch`); None outside one. A context variable, not an attribute: the
stages share one `Outputs` and run their batches as concurrent tasks."""


class Outputs:
    """Typed sends of the stages over one `Sender`, a user's content sealed for the user
    (`streams.privacy.payloads`). Dead letters keep at most `max_raw_bytes` of a record
    (`streams.pipeline.dead_letters`) and go to the dead-letter topic of the record's topic in
    `dlq_of` (`streams.app.topology.DLQ_OF`), `chat.turns.dlq` for a topic it does not name."""

    def __init__(self, send: Sender, sealer: Sealer, max_raw_bytes: int = 262144,
                 dlq_of: Mapping[str, str] | None = None) -> None:
        self.send = send
        self.sealer = sealer
        self.max_raw_bytes = max_raw_bytes
        self.dlq_of = dict(dlq_of or {})

    async def event(self, event: MemoryEvent) -> None:
        await self.send(names.MEMORY_EVENTS, event.user_id.encode(),
                        seal_event(self.sealer, event).model_dump_json().encode())

    async def proactivity(self, candidate: ProactivityCandidate) -> None:
        """A proactivity candidate: ids, reason, tone and scores, no content (`topics.proactivity`)."""
        await self.send(names.MEMORY_PROACTIVITY, candidate.user_id.encode(),
                        candidate.model_dump_json().encode())

    async def progress(self, progress: TurnProgress) -> None:
        """Send `progress`, or hold it until the batch ends inside `progress_per_batch`."""
        held = _HELD_PROGRESS.get()
        if held is not None:
            held.setdefault(progress.user_id, []).append(progress)
            return
        await self._send_progress(progress.user_id, [progress])

    @asynccontextmanager
    async def progress_per_batch(self, stage: str) -> AsyncIterator[None]:
        """Hold the progress entries `stage` makes while its batch runs; when it ends, send
        them in one record per user (`topics.progress`): a turn's progress record would
        otherwise be two of the fourteen records a turn costs. The entries go out after
        everything the batch sent, which is when a caller may count its turns done anyway.
        A record that cannot be sent is counted and logged: progress is bookkeeping, and the
        partition moves on. A batch that raises sends none (its records are redelivered)."""
        held: dict[str, list[TurnProgress]] = {}
        token = _HELD_PROGRESS.set(held)
        try:
            yield
        finally:
            _HELD_PROGRESS.reset(token)
        for user_id, entries in held.items():
            try:
                await self._send_progress(user_id, entries)
            except Exception as exc:  # noqa: BLE001 - progress is bookkeeping
                metrics.STAGE_ERRORS.labels(stage=stage, error=type(exc).__name__).inc()
                log.error("%s progress of %d turn(s) not sent: %s", stage, len(entries),
                          describe_failure(exc))

    async def _send_progress(self, user_id: str, entries: list[TurnProgress]) -> None:
        await self.send(names.MEMORY_PROGRESS, user_id.encode(), PROGRESS_RECORD.dump_json(entries))

    async def candidates(self, user_id: str, items: Sequence[bytes]) -> None:
        """A user's facts and chat commands (each `CandidateItem`'s JSON), in order, to
        `memory.candidates`: as few records as `MAX_ITEMS_PER_RECORD` allows, each the JSON
        array of its items sealed for the user (`topics.candidates`)."""
        for start in range(0, len(items), MAX_ITEMS_PER_RECORD):
            array = b"[" + b",".join(items[start:start + MAX_ITEMS_PER_RECORD]) + b"]"
            await self.send(names.MEMORY_CANDIDATES, user_id.encode(),
                            self.sealer.seal_stored(user_id, array)[0])

    async def command(self, command: Command, in_transit: bool = False) -> None:
        """A command to `memory.commands`; `in_transit` when a web handler sends it."""
        sealed = seal_command(self.sealer, command, in_transit)
        await self.send(names.MEMORY_COMMANDS, command.user_id.encode(),
                        sealed.model_dump_json().encode())

    async def dead_letter(self, record: Record, stage: str, reason: str, detail: str,
                          ref: str | None = None) -> bool:
        """Dead-letter `record` to its input's DLQ with the stage and a content-free reason.

        Never raises: a letter that cannot be built or sent is counted
        (`memstream_dlq_failures_total`) and logged without content, and the caller moves on —
        one record never stops its partition. Returns whether the letter was sent.
        """
        try:
            letter = dead_letter_of(record, stage, reason, detail, self.max_raw_bytes, self.sealer,
                                    ref)
            await self.send(self.dlq_of.get(record.topic, names.CHAT_TURNS_DLQ), record.key,
                            letter.model_dump_json().encode())
        except Exception as exc:  # noqa: BLE001 - the partition must move on
            metrics.DLQ_FAILURES.labels(stage=stage, reason=reason).inc()
            log.error("dead letter of %s[%d]@%d at stage %s (%s) not sent: %s", record.topic,
                      record.partition, record.offset, stage, reason, describe_failure(exc))
            return False
        metrics.DLQ_RECORDS.labels(stage=stage, reason=reason).inc()
        log.warning("dead-lettered record from %s[%d]@%d at stage %s: %s", record.topic,
                    record.partition, record.offset, stage, reason)
        return True
