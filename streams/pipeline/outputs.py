"""Sending to the output topics. Every record is keyed by user_id (SPEC §2)."""
from __future__ import annotations

import logging

from streams.observability import metrics
from streams.app.factory import (
    candidates_dlq_topic,
    candidates_topic,
    commands_dlq_topic,
    commands_topic,
    events_topic,
    progress_topic,
    turns_dlq_topic,
)
from topics import names
from topics.candidates import Candidate
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.events import MemoryEvent
from topics.progress import TurnProgress

log = logging.getLogger(__name__)

# The dead-letter topic of each input topic.
DLQ_OF = {
    names.CHAT_TURNS: turns_dlq_topic,
    names.MEMORY_CANDIDATES: candidates_dlq_topic,
    names.MEMORY_COMMANDS: commands_dlq_topic,
}


async def send_event(event: MemoryEvent) -> None:
    await events_topic.send(key=event.user_id.encode(), value=event.model_dump_json().encode())


async def send_progress(progress: TurnProgress) -> None:
    await progress_topic.send(key=progress.user_id.encode(), value=progress.model_dump_json().encode())


async def send_candidate(candidate: Candidate) -> None:
    await candidates_topic.send(
        key=candidate.turn.user_id.encode(), value=candidate.model_dump_json().encode()
    )


async def send_dead_letter(letter: DeadLetter, key: bytes | None) -> None:
    """Dead-letter a record; the reason is logged, the content never is."""
    metrics.DLQ_RECORDS.labels(stage=letter.stage, reason=letter.reason).inc()
    log.warning(
        "dead-lettered record from %s[%d]@%d at stage %s: %s",
        letter.topic, letter.partition, letter.offset, letter.stage, letter.reason,
    )
    await DLQ_OF.get(letter.topic, turns_dlq_topic).send(key=key, value=letter.model_dump_json().encode())


async def send_command(command: Command) -> None:
    await commands_topic.send(key=command.user_id.encode(), value=command.model_dump_json().encode())
