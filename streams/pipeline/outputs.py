"""What the stages send, and where. Every record is keyed by user_id (SPEC §2).

A stage never talks to Kafka itself: it sends through `Outputs`, whose `send` is the worker's
producer (`streams.app.factory`) or, in process, a set of queues (`streams.pipeline.inprocess`).
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from streams.observability import metrics
from streams.pipeline.records import Record
from topics import names
from topics.candidates import Candidate
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.events import MemoryEvent
from topics.progress import TurnProgress

log = logging.getLogger(__name__)

Sender = Callable[[str, bytes | None, bytes], Awaitable[None]]
"""send(topic, key, value): produce one record."""

# The dead-letter topic of each input topic.
DLQ_OF = {
    names.CHAT_TURNS: names.CHAT_TURNS_DLQ,
    names.MEMORY_CANDIDATES: names.MEMORY_CANDIDATES_DLQ,
    names.MEMORY_COMMANDS: names.MEMORY_COMMANDS_DLQ,
}


class Outputs:
    """Typed sends of the stages over one `Sender`."""

    def __init__(self, send: Sender) -> None:
        self.send = send

    async def event(self, event: MemoryEvent) -> None:
        await self.send(names.MEMORY_EVENTS, event.user_id.encode(), event.model_dump_json().encode())

    async def progress(self, progress: TurnProgress) -> None:
        await self.send(names.MEMORY_PROGRESS, progress.user_id.encode(),
                        progress.model_dump_json().encode())

    async def candidate(self, candidate: Candidate) -> None:
        await self.send(names.MEMORY_CANDIDATES, candidate.turn.user_id.encode(),
                        candidate.model_dump_json().encode())

    async def command(self, command: Command) -> None:
        await self.send(names.MEMORY_COMMANDS, command.user_id.encode(),
                        command.model_dump_json().encode())

    async def dead_letter(self, letter: DeadLetter, key: bytes | None) -> None:
        """Dead-letter a record to its input's DLQ; the reason is logged, the content never is."""
        metrics.DLQ_RECORDS.labels(stage=letter.stage, reason=letter.reason).inc()
        log.warning(
            "dead-lettered record from %s[%d]@%d at stage %s: %s",
            letter.topic, letter.partition, letter.offset, letter.stage, letter.reason,
        )
        await self.send(DLQ_OF.get(letter.topic, names.CHAT_TURNS_DLQ), key,
                        letter.model_dump_json().encode())

    async def dead_letter_record(self, record: Record, stage: str, reason: str, detail: str) -> None:
        """Dead-letter `record` as it arrived (raw bytes untouched) with the stage and reason."""
        await self.dead_letter(
            DeadLetter.wrap(stage=stage, reason=reason, error=detail, topic=record.topic,
                            partition=record.partition, offset=record.offset, key=record.key,
                            raw=record.value or b""),
            record.key,
        )
