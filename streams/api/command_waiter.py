"""Await the outcome of a command sent to `memory.commands` (the registry's `?wait=1`).

The registry routes a write to the worker that owns the user, and the commands stage of that
same worker applies the command: it tells this waiter what became of each command it took
(`streams.pipeline.commands.CommandObserver`), and the waiting request's future resolves.
Nothing polls. A command applied before anyone waited is found in the `applied` table
(`outcome_of_applied`).

A request waits for its own command: a future expects the binding of the request's command
(`streams.api.command_ids.binding`) and resolves only with the outcome of a command of that
binding (or of one that carries none), so a request that reused an Idempotency-Key for another
operation never takes the first operation's outcome for its own.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from streams.memory.tables import command_key
from streams.pipeline.commands import IDEMPOTENCY_KEY_REUSED


@dataclass
class Outcome:
    """What became of a command: `applied` (with its events) or `rejected` (with the reason)."""

    status: str
    events: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    binding: str | None = None
    """What the command's id was bound to (`streams.api.command_ids.binding`); None for a
    command that carried none (one applied before bindings were kept)."""

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": self.status, "events": self.events}
        if self.reason:
            body["reason"] = self.reason
        return body

    def bound_elsewhere(self, binding: str) -> bool:
        """Whether this outcome is of a command bound to another operation than `binding`."""
        return self.binding is not None and self.binding != binding


def outcome_of_applied(record: dict[str, Any] | None) -> Outcome | None:
    if record is None:
        return None
    bound = record.get("binding")
    return Outcome("applied", list(record.get("events", [])),
                   binding=bound if isinstance(bound, str) else None)


def refused_as_reused(outcome: Outcome) -> bool:
    """Whether the commands stage refused the command for its reused id."""
    return outcome.status == "rejected" and (outcome.reason or "").startswith(IDEMPOTENCY_KEY_REUSED)


_Waiting = tuple[asyncio.Future[Outcome], str | None]


class CommandWaiter:
    """Futures of commands someone waits for, resolved by the commands stage."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[_Waiting]] = {}

    def expect(self, user_id: str, command_id: str,
               binding: str | None = None) -> asyncio.Future[Outcome]:
        """A future of the outcome of the command `command_id` of `binding` (any, when None);
        register it before sending the command."""
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(command_key(user_id, command_id), []).append((future, binding))
        return future

    def forget(self, user_id: str, command_id: str, future: asyncio.Future[Outcome]) -> None:
        key = command_key(user_id, command_id)
        waiting = [w for w in self._waiting.get(key, []) if w[0] is not future]
        if waiting:
            self._waiting[key] = waiting
        else:
            self._waiting.pop(key, None)

    def _resolve(self, key: str, outcome: Outcome) -> None:
        kept = []
        for future, expected in self._waiting.pop(key, []):
            if expected is not None and outcome.bound_elsewhere(expected):
                kept.append((future, expected))  # another operation's command: not this one's
            elif not future.done():
                future.set_result(outcome)
        if kept:
            self._waiting[key] = kept

    # --- streams.pipeline.commands.CommandObserver ---------------------------------------------
    def applied(self, user_id: str, command_id: str, events: list[dict[str, Any]],
                binding: str | None = None) -> None:
        self._resolve(command_key(user_id, command_id), Outcome("applied", events, binding=binding))

    def rejected(self, user_id: str, command_id: str, reason: str, binding: str | None = None) -> None:
        self._resolve(command_key(user_id, command_id),
                      Outcome("rejected", reason=reason, binding=binding))
