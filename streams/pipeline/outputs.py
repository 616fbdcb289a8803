"""What the stages send, and where. Every record is keyed by user_id (docs/architecture.md#topics).

A stage never talks to Kafka itself: it sends through `Outputs`, whose `send` is the worker's
producer (`streams.app.factory`) or, in process, a set of queues (`streams.app.inprocess`);
both build it the same way (`streams.app.stage_kit`).
"""
from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.pipeline.dead_letters import dead_letter_of
from streams.pipeline.records import Record
from streams.pipeline.retries import RetryPolicy, Sleep, StageRetries
from streams.privacy.payloads import seal_command, seal_event
from streams.privacy.sealed import Sealer
from topics import names
from topics.candidates import record_arrays
from topics.commands import Command
from topics.events import MemoryEvent
from topics.events_wire import event_value
from topics.proactivity import ProactivityCandidate
from topics.progress import TurnProgress, progress_record

log = logging.getLogger(__name__)

Sender = Callable[[str, bytes | None, bytes], Awaitable[None]]
"""send(topic, key, value): produce one record."""

@dataclass
class _Held:
    """What a batch's stage holds until its batch ends (`Outputs.held_per_batch`), by user."""

    events: dict[str, deque[bytes]] = field(default_factory=dict)
    """Each user's events, sealed, as `MemoryEvent` JSON (`topics.events_wire.event_value`)."""
    progress: dict[str, list[TurnProgress]] = field(default_factory=dict)


_HELD: ContextVar[_Held | None] = ContextVar("held", default=None)
"""What the batch the current task is processing holds (`Outputs.held_per_batch`); None
outside one. A context variable, not an attribute: the stages share one `Outputs` and run their
batches as concurrent tasks."""


class Outputs:
    """Typed sends of the stages over one `Sender`, a user's content sealed for the user
    (`streams.privacy.payloads`). Dead letters keep at most `max_raw_bytes` of a record
    (`streams.pipeline.dead_letters`) and go to the dead-letter topic of the record's topic in
    `dlq_of` (`streams.app.topology.DLQ_OF`), `chat.turns.dlq` for a topic it does not name."""

    def __init__(self, send: Sender, sealer: Sealer, max_raw_bytes: int = 262144,
                 dlq_of: Mapping[str, str] | None = None, retry_policy: RetryPolicy = RetryPolicy()) -> None:
        """`retry_policy`: how the held events and progress of a batch are sent again after a
        passing fault (`streams.pipeline.retries`; `retry_sleep` is its pause)."""
        self.send = send
        self.retry_policy = replace(retry_policy, on_bug="dead_letter")
        self.retry_sleep: Sleep = asyncio.sleep
        self.sealer = sealer
        self.max_raw_bytes = max_raw_bytes
        self.dlq_of = dict(dlq_of or {})

    async def event(self, event: MemoryEvent) -> None:
        """Send `event`, its content sealed for its user; inside `held_per_batch`, hold it
        until the batch ends."""
        value = event_value(seal_event(self.sealer, event))
        held = _HELD.get()
        if held is not None:
            held.events.setdefault(event.user_id, deque()).append(value)
            return
        await self._send_events(event.user_id, deque([value]))

    async def _send_events(self, user_id: str, events: deque[bytes]) -> None:
        """A user's events, in order, one record each (`topics.events_wire`), taken off
        `events` as each is sent: sent again after a passing fault, they go on from the
        first one not sent."""
        while events:
            await self.send(names.MEMORY_EVENTS, user_id.encode(), events[0])
            events.popleft()

    async def proactivity(self, candidate: ProactivityCandidate) -> None:
        """A proactivity candidate: ids, reason, tone and scores, no content (`topics.proactivity`)."""
        await self.send(names.MEMORY_PROACTIVITY, candidate.user_id.encode(),
                        candidate.model_dump_json().encode())

    async def progress(self, progress: TurnProgress) -> None:
        """Send `progress`, or hold it until the batch ends inside `held_per_batch`."""
        held = _HELD.get()
        if held is not None:
            held.progress.setdefault(progress.user_id, []).append(progress)
            return
        await self._send_progress(progress.user_id, [progress])

    @asynccontextmanager
    async def held_per_batch(self, stage: str) -> AsyncIterator[None]:
        """Hold the memory events and progress entries `stage` makes while its batch runs;
        when it ends, send each user's events, in order, one record each (`topics.events_wire`:
        what any Kafka consumer reads, the producer's compression batching them), then each
        user's progress in one record (`topics.progress`). Everything held goes out after what
        the batch sent directly, the progress last: a caller that counts its turns done finds
        their events already sent.

        A batch that raises sends nothing it held (its records are redelivered, and a
        redelivered item sends its events again: `applied`). A user's events whose send meets
        a passing fault are sent again until they go (the partition waits); those that fail
        otherwise (a record the broker refuses) are counted and logged after their retries,
        and the partition moves on; so is progress, which is bookkeeping.
        """
        held = _Held()
        token = _HELD.set(held)
        try:
            yield
        finally:
            _HELD.reset(token)
        for user_id, events in held.events.items():
            await self._send_held(stage, "events", len(events),
                                  functools.partial(self._send_events, user_id, events))
        for user_id, entries in held.progress.items():
            await self._send_held(stage, "progress", len(entries),
                                  functools.partial(self._send_progress, user_id, entries))

    async def _send_held(self, stage: str, what: str, count: int,
                         sending: Callable[[], Awaitable[None]]) -> None:
        retries = StageRetries(stage, self.retry_policy, self.retry_sleep)
        try:
            await retries.run(f"{count} held {what} of a user", sending)
        except Exception as exc:  # noqa: BLE001 - the partition moves on
            metrics.STAGE_ERRORS.labels(stage=stage, error=type(exc).__name__).inc()
            log.error("%s: %d held %s of a user not sent: %s", stage, count, what,
                      describe_failure(exc))

    async def _send_progress(self, user_id: str, entries: list[TurnProgress]) -> None:
        await self.send(names.MEMORY_PROGRESS, user_id.encode(), progress_record(entries))

    async def candidates(self, user_id: str, items: Sequence[bytes]) -> None:
        """A user's facts and chat commands (each `CandidateItem`'s JSON), in order, to
        `memory.candidates`: as few records as `topics.candidates.record_arrays` allows, each
        the JSON array of its items sealed for the user (`topics.candidates`)."""
        for array in record_arrays(items):
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
