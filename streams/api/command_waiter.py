"""Await the outcome of a command sent to `memory.commands` (the registry's `?wait=1`).

The commands stage records every applied command in the `applied` table under
`streams.memory.tables.command_key` and dead-letters the ones it cannot apply. A Faust sensor (the
public hook Faust calls on every table write and every send) sees both in the worker that owns
the user's partition — the worker the registry routes the request to — and resolves the waiting
request's future. Nothing polls.
"""
from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field
from typing import Any

from faust.sensors import Sensor

from streams.memory.tables import command_key
from topics.names import MEMORY_COMMANDS_DLQ


@dataclass
class Outcome:
    """What became of a command: `applied` (with its events) or `rejected` (with the reason)."""

    status: str
    events: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": self.status, "events": self.events}
        if self.reason:
            body["reason"] = self.reason
        return body


def outcome_of_applied(record: dict[str, Any] | None) -> Outcome | None:
    if record is None:
        return None
    return Outcome("applied", list(record.get("events", [])))


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class CommandWaiter(Sensor):
    """Futures of commands someone waits for, resolved from table writes and dead letters."""

    def __init__(self, applied_table_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._table = applied_table_name
        self._waiting: dict[str, list[asyncio.Future[Outcome]]] = {}

    def expect(self, user_id: str, command_id: str) -> asyncio.Future[Outcome]:
        """A future of the command's outcome; register it before sending the command."""
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(command_key(user_id, command_id), []).append(future)
        return future

    def forget(self, user_id: str, command_id: str, future: asyncio.Future[Outcome]) -> None:
        key = command_key(user_id, command_id)
        futures = [f for f in self._waiting.get(key, []) if f is not future]
        if futures:
            self._waiting[key] = futures
        else:
            self._waiting.pop(key, None)

    def _resolve(self, key: str, outcome: Outcome) -> None:
        for future in self._waiting.pop(key, []):
            if not future.done():
                future.set_result(outcome)

    # --- Faust sensor hooks (called synchronously on the worker's event loop) ------------------
    def on_table_set(self, table: Any, key: Any, value: Any) -> None:
        if not self._waiting or getattr(table, "name", None) != self._table:
            return
        text = _text(key)
        if text in self._waiting and isinstance(value, dict):
            outcome = outcome_of_applied(value)
            if outcome is not None:
                self._resolve(text, outcome)

    def on_send_initiated(self, producer: Any, topic: str, message: Any, keysize: int,
                          valsize: int) -> Any:
        if not self._waiting or topic != MEMORY_COMMANDS_DLQ:
            return None
        try:
            letter = json.loads(message.value)
            command = json.loads(base64.b64decode(letter["raw_b64"]))
            key = command_key(command["user_id"], command["command_id"])
        except (TypeError, ValueError, KeyError):
            return None  # a malformed command cannot be one we sent and wait for
        if key in self._waiting:
            reason = f"{letter.get('reason', 'rejected')}: {letter.get('error', '')}".rstrip(": ")
            self._resolve(key, Outcome("rejected", reason=reason))
        return None
