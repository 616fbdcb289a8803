"""Await the outcome of a command sent to `memory.commands` (the registry's `?wait=1`).

The registry routes a write to the worker that owns the user, and the commands stage of that
same worker applies the command: it tells this waiter what became of each command it took
(`streams.pipeline.commands.CommandObserver`), and the waiting request's future resolves.
Nothing polls. A command applied before anyone waited is found in the `applied` table
(`outcome_of_applied`).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from streams.memory.tables import command_key


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


class CommandWaiter:
    """Futures of commands someone waits for, resolved by the commands stage."""

    def __init__(self) -> None:
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

    # --- streams.pipeline.commands.CommandObserver ---------------------------------------------
    def applied(self, user_id: str, command_id: str, events: list[dict[str, Any]]) -> None:
        self._resolve(command_key(user_id, command_id), Outcome("applied", events))

    def rejected(self, user_id: str, command_id: str, reason: str) -> None:
        self._resolve(command_key(user_id, command_id), Outcome("rejected", reason=reason))
