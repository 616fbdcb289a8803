"""Sealing what memstream writes to topics, and opening it again.

- `memory.events`: `summary` and `meta` sealed into `sealed`; the envelope stays in clear.
- `memory.candidates`: the whole record sealed (a fact carries the turn's text), in the binary
  envelope of the sealed tables (`streams.privacy.table_values`; the JSON `Sealed` envelope
  written before still opens).
- `memory.commands`: `query`, `text` and `topic` sealed into `sealed` (commands from other
  producers may arrive in clear and are accepted as they are).
- dead letters: the kept bytes sealed (`streams.pipeline.dead_letters`).
"""
from __future__ import annotations

import json
from typing import Any

import orjson

from streams.privacy import table_values
from streams.privacy.crypto import SealError
from streams.privacy.sealed import Sealer
from topics.commands import Command
from topics.events import MemoryEvent
from topics.sealed import Sealed


def seal_event(sealer: Sealer, event: MemoryEvent) -> MemoryEvent:
    """The event with its content sealed (a content-free event, e.g. `purged`, goes as it is)."""
    if not event.summary and not event.meta:
        return event
    sealed = sealer.seal(event.user_id, {"summary": event.summary, "meta": event.meta})
    return event.model_copy(update={"summary": "", "meta": {}, "sealed": sealed})


def open_event(sealer: Sealer, event: MemoryEvent) -> MemoryEvent:
    """The event with its content back; raises `SealError` when it does not open."""
    if event.sealed is None:
        return event
    content = sealer.open(event.sealed)
    return event.model_copy(update={"summary": content["summary"], "meta": content["meta"],
                                    "sealed": None})


def open_events(sealer: Sealer, events: list[MemoryEvent]) -> list[MemoryEvent]:
    """`events` (of one `memory.events` record, `topics.events_wire.events_of`) opened, leaving out
    those whose content no longer opens: sealed with a key a purge shredded since. The
    content-free events of that purge (`purged`, in clear) are in the same record when the purge
    came in the same batch, and stay: they are what removes the user's documents downstream."""
    opened = []
    for event in events:
        try:
            opened.append(open_event(sealer, event))
        except SealError:
            continue
    return opened


def seal_command(sealer: Sealer, command: Command, in_transit: bool = False) -> Command:
    """The command with `query`, `text` and `topic` sealed (none set: as it is). `in_transit`:
    a web handler's, which may only use a key the user already has (else the master key)."""
    content = {"query": command.query, "text": command.text, "topic": command.topic}
    if not any(content.values()):
        return command
    seal = sealer.seal_for_transit if in_transit else sealer.seal
    return command.model_copy(update={"query": None, "text": None, "topic": None,
                                      "sealed": seal(command.user_id, content)})


def open_command(sealer: Sealer, command: Command) -> Command:
    """The command with its content back (validated again); raises `SealError`."""
    if command.sealed is None:
        return command
    return command.opened(sealer.open(command.sealed))


def seal_record(sealer: Sealer, user_id: str, value: Any) -> bytes:
    """A whole record sealed for `user_id`, in the binary envelope (`table_values.pack`)."""
    return sealer.seal_stored(user_id, orjson.dumps(value))[0]


def open_record(sealer: Sealer, raw: bytes) -> Any:
    """The JSON value of a record written by `seal_record`, or by it before as a JSON `Sealed`
    envelope (a record in clear is returned as it is); raises `SealError` when it does not
    open, ValueError when it is neither."""
    if table_values.is_packed(raw):
        try:
            stored = table_values.unpack(raw)
        except SealError:
            raise ValueError("not a sealed record") from None
        return orjson.loads(sealer.open_stored(stored))
    value = json.loads(raw)
    if isinstance(value, dict) and set(value) >= {"user_id", "sealed"}:
        return sealer.open(Sealed.model_validate(value))
    return value
