"""Stage — commands: explicit changes from `memory.commands` (chat hot path, API, admin).

Input `memory.commands` (raw bytes, `topics.commands.Command`). Works on the same tables as
dedup (co-partitioned by user_id). Outputs: `memory.events`, `memory.progress` (for commands
said in a chat turn), `memory.commands.dlq` for records that are malformed or cannot apply.
"""
from __future__ import annotations

import logging
import time

from faust.types import EventT
from pydantic import ValidationError

from agents.dedup import index_cache, state
from streams.observability import metrics
from streams.memory.access import record_reads
from streams.app.factory import app, applied_table, commands_topic, memories_table, settings
from streams.memory.state import CommandError
from streams.pipeline.outputs import send_dead_letter, send_event, send_progress
from streams.app.services import embed
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.progress import TurnProgress

log = logging.getLogger(__name__)
STAGE = "commands"


def parse_command_record(raw: bytes | None, key: bytes | None) -> Command:
    """Validate one record; raises `ValueError` with a content-free reason."""
    if not raw or len(raw) > settings.max_record_bytes:
        raise ValueError("empty_or_oversized")
    try:
        command = Command.model_validate_json(raw)
    except ValidationError as exc:
        fields = ",".join(".".join(map(str, e["loc"])) or "<root>" for e in exc.errors()[:5])
        raise ValueError(f"invalid_command: {fields}") from None
    if key != command.user_id.encode():
        raise ValueError("key_mismatch")
    return command


async def apply(command: Command) -> str:
    """Apply one command and send its events (and the progress of the turn that said it)."""
    if command.kind == "touch":  # a read: no event, no audit entry, no revision
        record_reads(memories_table, applied_table, index_cache.ensure(), command)
        metrics.COMMANDS.labels(kind=command.kind).inc()
        return "applied"
    text = command.text if command.kind == "edit" else command.query
    vector = (await embed([text]))[0] if text else None
    applied = state().apply_command(command, vector)
    for event in applied.events:
        await send_event(event)
    if command.turn_id:
        await send_progress(TurnProgress(
            user_id=command.user_id, thread_id=command.thread_id, turn_id=command.turn_id,
            stage=STAGE, outcome="applied", fact_index=0, fact_count=1,
            memory_id=applied.memory_id or None,
        ))
    metrics.COMMANDS.labels(kind=command.kind).inc()
    return "applied"


async def handle_record(event: EventT) -> str:
    message = event.message
    started = time.perf_counter()
    metrics.STAGE_RECORDS.labels(stage=STAGE).inc()
    try:
        command = parse_command_record(event.value, message.key)
        return await apply(command)
    except (ValueError, CommandError) as exc:
        reason = "inapplicable" if isinstance(exc, CommandError) else str(exc).split(":")[0]
        await _dead_letter(event, reason, str(exc))
        return "dlq"
    except Exception as exc:  # noqa: BLE001 - never block the partition on one record
        log.exception("command failed")
        await _dead_letter(event, "internal_error", type(exc).__name__)
        return "dlq"
    finally:
        metrics.STAGE_SECONDS.labels(stage=STAGE).observe(time.perf_counter() - started)


async def _dead_letter(event: EventT, reason: str, detail: str) -> None:
    message = event.message
    await send_dead_letter(
        DeadLetter.wrap(stage=STAGE, reason=reason, error=detail, topic=message.topic,
                        partition=message.partition, offset=message.offset, key=message.key,
                        raw=event.value or b""),
        message.key,
    )


@app.agent(commands_topic, name="commands")
async def commands_agent(stream):  # type: ignore[no-untyped-def]
    """Consume `memory.commands`; yields each outcome."""
    async for event in stream.events():
        yield await handle_record(event)
