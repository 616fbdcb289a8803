"""Stage — commands: explicit changes from `memory.commands` (chat hot path, registry, admin).

Works on the same memory tables as dedup (co-partitioned by user_id). Outputs:
`memory.events`, `memory.progress` (for commands said in a chat turn), and
`memory.commands.dlq` for records that are malformed or cannot apply. A `touch` (a query's
read) refreshes `last_accessed` and `access_count` and announces nothing.

Run by `agents/commands.py` in the worker and by `streams.app.inprocess` without Kafka.
"""
from __future__ import annotations

import logging
import functools
import time
from typing import Any, Callable, Protocol

from pydantic import ValidationError

from streams.errors import MemstreamError
from streams.settings import InputSettings
from streams.memory.access import record_reads
from streams.memory.applied import Applied
from streams.memory import commands as memory_commands
from streams.memory.commands import CommandError
from streams.memory.tables import command_key
from streams.memory.store import MemoryStore
from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.pipeline.outputs import Outputs
from streams.pipeline.records import Record, StageClock
from streams.pipeline.retries import RetryPolicy, StageRetries
from streams.privacy.crypto import SealError
from streams.privacy.payloads import open_command
from streams.providers.embedders import Embed
from topics.commands import Command
from topics.progress import TurnProgress
from topics.schema_errors import location

log = logging.getLogger(__name__)
STAGE = "commands"


class InvalidCommand(MemstreamError, ValueError):
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


def _content_free(exc: Exception) -> str:
    """The reason of a failed command, without the input: pydantic's messages quote it."""
    if isinstance(exc, (CommandError, InvalidCommand)):
        return str(exc)
    if isinstance(exc, ValidationError):
        return ",".join(".".join(map(str, e["loc"])) or "<root>" for e in exc.errors()[:5])
    return type(exc).__name__


IDEMPOTENCY_KEY_REUSED = "idempotency_key_reused"
"""The reason of a command refused because its id was applied for another operation."""


class IdempotencyConflict(CommandError):
    """A command whose id was applied for another operation (another `binding`): refused, never
    taken for a replay of the first (`streams.api.command_ids`)."""


class CommandObserver(Protocol):
    """Told what became of each command the stage took (the registry's `?wait=1` waiter), with
    the command's `binding` (what its id was given for; None when it carries none)."""

    def applied(self, user_id: str, command_id: str, events: list[dict[str, Any]],
                binding: str | None = None) -> None: ...

    def rejected(self, user_id: str, command_id: str, reason: str,
                 binding: str | None = None) -> None: ...


class CommandsStage:
    """Commands in, memory events out."""

    def __init__(self, limits: InputSettings, store: MemoryStore, embed: Embed, outputs: Outputs,
                 observer: CommandObserver | None = None) -> None:
        """`limits`: the input limits a command record is checked against."""
        self.limits = limits
        self.retries = StageRetries(STAGE, RetryPolicy.of(limits), record_faults=(CommandError, SealError))
        self.store = store
        self.embed = embed
        self.outputs = outputs
        self.observer = observer

    async def handle(self, record: Record) -> str:
        """Apply one raw record; return "applied" or "dlq". Never raises: a bad record, or a
        command that cannot apply, is dead-lettered and the partition moves on; any other
        failure is retried, the partition waiting (`streams.pipeline.retries`). The command's
        events go out in one record, after its table writes (`Outputs.held_per_batch`)."""
        notices: list[Callable[[], None]] = []
        async with self.outputs.held_per_batch(STAGE):
            status = await self._handle(record, notices)
        # Told only now, once the command's events are sent: a `?wait=1` answer then means
        # its events are in `memory.events` (a sink reading on finds them).
        for notice in notices:
            notice()
        return status

    async def _handle(self, record: Record, notices: list[Callable[[], None]]) -> str:
        started = time.perf_counter()
        metrics.STAGE_RECORDS.labels(stage=STAGE).inc()
        command: Command | None = None
        try:
            command = parse_command_record(record.value, record.key, self.limits.max_record_bytes)
            command = open_command(self.outputs.sealer, command)
            clock = StageClock.start(record, STAGE)
            applied = await self.retries.run(f"{record.topic}[{record.partition}]@{record.offset}",
                                             lambda: self._apply(command, clock))
            if self.observer is not None:
                events = [e.model_dump(mode="json") for e in applied.events]
                notices.append(functools.partial(self.observer.applied, command.user_id,
                                                 command.command_id, events, binding=command.binding))
            return "applied"
        except SealError:
            await self._reject(record, command, "sealed_unreadable",
                               "sealed with a key that is gone (a purged user)")
        except (ValueError, CommandError) as exc:
            reason = (IDEMPOTENCY_KEY_REUSED if isinstance(exc, IdempotencyConflict)
                      else "inapplicable" if isinstance(exc, CommandError) else str(exc).split(":")[0])
            await self._reject(record, command, reason, _content_free(exc))
        except Exception as exc:  # noqa: BLE001 - a bug past its retries (STAGE_ON_BUG=dead_letter)
            metrics.STAGE_ERRORS.labels(stage=STAGE, error=type(exc).__name__).inc()
            log.error("command failed on %s[%d]@%d: %s", record.topic, record.partition,
                      record.offset, describe_failure(exc))
            await self._reject(record, command, "internal_error", type(exc).__name__)
        finally:
            self.store.tables.flush()
            metrics.STAGE_SECONDS.labels(stage=STAGE).observe(time.perf_counter() - started)
        return "dlq"

    async def _apply(self, command: Command, clock: StageClock) -> Applied:
        await self.store.ready()
        return await apply_command(self.store, self.embed, self.outputs, command, clock)

    async def _reject(self, record: Record, command: Command | None, reason: str, detail: str) -> None:
        """Dead-letter the record and tell the observer (when the command could be read)."""
        await self.outputs.dead_letter(record, STAGE, reason, detail,
                                       command.command_id if command else None)
        if self.observer is not None and command is not None:
            self.observer.rejected(command.user_id, command.command_id, f"{reason}: {detail}",
                                   binding=command.binding)


async def apply_command(store: MemoryStore, embed: Embed, outputs: Outputs, command: Command,
                        clock: StageClock | None = None) -> Applied:
    """Apply one command to the store and send its events, and the progress of the chat turn
    that said it. Raises `CommandError` when it cannot apply.

    Run by the commands stage for `memory.commands`, and by the dedup stage for the commands
    said in chat (`memory.candidates`).
    """
    if command.kind == "touch":  # a read: no event, no audit entry, no revision
        tables = store.tables
        record_reads(tables.memories, tables.applied, store.index(), command)
        metrics.COMMANDS.labels(kind=command.kind).inc()
        return Applied("applied", "")
    if command.binding is not None:
        _check_binding(store.tables.applied, command)
    # An edit's text passes the write policy first (raises CommandError when refused), and the
    # vector stored is the text as the policy repaired it.
    command = memory_commands.admit_edit(store.state(), command)
    text = command.text if command.kind == "edit" else command.query
    vector = (await embed([text]))[0] if text else None
    applied = memory_commands.apply_command(store.state(), command, vector)
    if command.binding is not None and not applied.replayed:
        _keep_binding(store.tables.applied, command)
    for event in applied.events:
        await outputs.event(event)
    if command.turn_id:
        progress = TurnProgress(
            user_id=command.user_id, thread_id=command.thread_id, turn_id=command.turn_id,
            stage=STAGE, outcome="applied", fact_index=0, fact_count=1,
            memory_id=applied.memory_id or None,
        )
        await outputs.progress(clock.stamp(progress) if clock else progress)
    metrics.COMMANDS.labels(kind=command.kind).inc()
    return applied


def _check_binding(applied_table: Any, command: Command) -> None:
    """Raise `IdempotencyConflict` when the command's id was applied for another binding. A
    record that keeps none (applied before bindings were kept, or that no longer opens) cannot
    tell: the command is a replay, as before."""
    record = applied_table.get(command_key(command.user_id, command.command_id))
    bound = record.get("binding") if isinstance(record, dict) else None
    if isinstance(bound, str) and bound != command.binding:
        raise IdempotencyConflict("this command id was applied for another operation")


def _keep_binding(applied_table: Any, command: Command) -> None:
    """Keep the command's binding in its `applied` record, just made (one write of the key in
    the batch: the write cache holds both)."""
    key = command_key(command.user_id, command.command_id)
    record = applied_table.get(key)
    if isinstance(record, dict) and record.get("binding") != command.binding:
        applied_table[key] = {**record, "binding": command.binding}
