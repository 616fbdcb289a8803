"""Stage — commands: explicit changes from `memory.commands` (chat hot path, registry, admin).

Works on the same memory tables as dedup (co-partitioned by user_id). Outputs:
`memory.events`, `memory.progress` (for commands said in a chat turn), and
`memory.commands.dlq` for records that are malformed or cannot apply. A `touch` (a query's
read) refreshes `last_accessed` and `access_count` and announces nothing.

Run by `agents/commands.py` in the worker and by `streams.pipeline.inprocess` without Kafka.
"""
from __future__ import annotations

import logging
import time

from pydantic import ValidationError

from streams.app.settings import Settings
from streams.memory.access import record_reads
from streams.memory.commands import CommandError
from streams.memory.store import MemoryStore
from streams.observability import metrics
from streams.pipeline.dedup import Embed
from streams.pipeline.outputs import Outputs
from streams.pipeline.records import Record
from topics.commands import Command
from topics.progress import TurnProgress
from topics.schema_errors import location

log = logging.getLogger(__name__)
STAGE = "commands"


class InvalidCommand(ValueError):
    """A `memory.commands` record that is not a valid command for its key; the message is a
    content-free reason."""


def parse_command_record(raw: bytes | None, key: bytes | None, max_bytes: int) -> Command:
    """Validate one record; raises `InvalidCommand`."""
    if not raw or len(raw) > max_bytes:
        raise InvalidCommand("empty_or_oversized")
    try:
        command = Command.model_validate_json(raw)
    except ValidationError as exc:
        fields = ",".join(location(e) for e in exc.errors()[:5])
        raise InvalidCommand(f"invalid_command: {fields}") from None
    if key != command.user_id.encode():
        raise InvalidCommand("key_mismatch")
    return command


class CommandsStage:
    """Commands in, memory events out."""

    def __init__(self, settings: Settings, store: MemoryStore, embed: Embed, outputs: Outputs) -> None:
        self.settings = settings
        self.store = store
        self.embed = embed
        self.outputs = outputs

    async def handle(self, record: Record) -> str:
        """Apply one raw record; return "applied" or "dlq". Never raises."""
        started = time.perf_counter()
        metrics.STAGE_RECORDS.labels(stage=STAGE).inc()
        try:
            command = parse_command_record(record.value, record.key, self.settings.max_record_bytes)
            return await self.apply(command)
        except (ValueError, CommandError) as exc:
            reason = "inapplicable" if isinstance(exc, CommandError) else str(exc).split(":")[0]
            await self.outputs.dead_letter_record(record, STAGE, reason, str(exc))
            return "dlq"
        except Exception as exc:  # noqa: BLE001 - never block the partition on one record
            log.exception("command failed")
            await self.outputs.dead_letter_record(record, STAGE, "internal_error", type(exc).__name__)
            return "dlq"
        finally:
            metrics.STAGE_SECONDS.labels(stage=STAGE).observe(time.perf_counter() - started)

    async def apply(self, command: Command) -> str:
        """Apply one command and send its events (and the progress of the turn that said it)."""
        if command.kind == "touch":  # a read: no event, no audit entry, no revision
            tables = self.store.tables
            record_reads(tables.memories, tables.applied, self.store.index(), command)
            metrics.COMMANDS.labels(kind=command.kind).inc()
            return "applied"
        text = command.text if command.kind == "edit" else command.query
        vector = (await self.embed([text]))[0] if text else None
        applied = self.store.state().apply_command(command, vector)
        for event in applied.events:
            await self.outputs.event(event)
        if command.turn_id:
            await self.outputs.progress(TurnProgress(
                user_id=command.user_id, thread_id=command.thread_id, turn_id=command.turn_id,
                stage=STAGE, outcome="applied", fact_index=0, fact_count=1,
                memory_id=applied.memory_id or None,
            ))
        metrics.COMMANDS.labels(kind=command.kind).inc()
        return "applied"
