"""The `applied` records of a turn's candidates in one table value: one changelog record per turn.

Each candidate's `applied` record (`streams.memory.applied`) used to be its own key, one
sealing and one changelog record per candidate. A turn's candidates always travel in one
`memory.candidates` record and are applied in one batch, so they can share a key: the
`applied` table holds, under the turn's key (`turn_applied_key`), each candidate's record by
its id (`{"$turn": 1, "candidates": {id: record}}`), and the write cache makes the turn's key
once per batch (docs/decisions.md#the-applied-records-of-a-turn-are-one-value).

`AppliedByTurn` is the `applied` table as the stages have always used it, a mapping by key:
a candidate's key (`streams.memory.tables.candidate_key`) names its turn, and reads and writes
it inside the turn's value. Where a candidate's record is under its key of before (tables
written before), it is read and written there, so a replay and a purge's scrubbing still find
it. Every other key (commands, touches) is a key of its own, as before.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson

from streams.memory.tables import composite_key
from streams.tables import ReadableItems, Table

TURN_FORMAT = 1
_FORMAT_FIELD = "$turn"


def turn_applied_key(user_id: str, thread_id: str, turn_id: str) -> str:
    """The key of the `applied` records of one turn's candidates."""
    return composite_key(user_id, "turn", thread_id, turn_id)


def legacy_candidate_key(user_id: str, candidate_id: str) -> str:
    """The key a candidate's `applied` record had before it moved into its turn's value."""
    return composite_key(user_id, "candidate", candidate_id)


def _candidate_of(key: Any) -> tuple[str, str, str] | None:
    """(turn key, key of before, candidate id) of a candidate's key, None for any other key."""
    if not isinstance(key, str) or not key.startswith("[") or '"candidate"' not in key:
        return None
    try:
        parts = orjson.loads(key)
    except orjson.JSONDecodeError:  # a lone surrogate in an id: `composite_key` wrote it by `json`
        parts = json.loads(key)
    if len(parts) != 5 or parts[1] != "candidate":
        return None
    user_id, _, thread_id, turn_id, candidate_id = parts
    return (turn_applied_key(user_id, thread_id, turn_id),
            legacy_candidate_key(user_id, candidate_id), candidate_id)


class AppliedByTurn(ReadableItems):
    """The `applied` table with a turn's candidates under one key (module doc)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __getitem__(self, key: Any) -> Any:
        candidate = _candidate_of(key)
        if candidate is None:
            return self.table[key]
        turn_key, legacy_key, candidate_id = candidate
        if legacy_key in self.table:
            return self.table[legacy_key]
        try:
            return self.table[turn_key]["candidates"][candidate_id]
        except (KeyError, TypeError):
            raise KeyError(key) from None

    def __setitem__(self, key: Any, value: Any) -> None:
        candidate = _candidate_of(key)
        if candidate is None:
            self.table[key] = value
            return
        turn_key, legacy_key, candidate_id = candidate
        if legacy_key in self.table:
            self.table[legacy_key] = value
            return
        turn = self._turn(turn_key)
        self.table[turn_key] = {_FORMAT_FIELD: TURN_FORMAT,
                                "candidates": {**turn, candidate_id: value}}

    def __delitem__(self, key: Any) -> None:
        candidate = _candidate_of(key)
        if candidate is None:
            del self.table[key]
            return
        turn_key, legacy_key, candidate_id = candidate
        if legacy_key in self.table:
            del self.table[legacy_key]
            return
        turn = self._turn(turn_key)
        if candidate_id not in turn:
            raise KeyError(key)
        rest = {k: v for k, v in turn.items() if k != candidate_id}
        if rest:
            self.table[turn_key] = {_FORMAT_FIELD: TURN_FORMAT, "candidates": rest}
        else:
            del self.table[turn_key]

    def __contains__(self, key: object) -> bool:
        """Whether the key has a record, readable or not. A turn's value that no longer opens
        (its user was purged) holds every candidate of the turn: they were applied together."""
        candidate = _candidate_of(key)
        if candidate is None:
            return key in self.table
        turn_key, legacy_key, candidate_id = candidate
        if legacy_key in self.table:
            return True
        if turn_key not in self.table:
            return False
        try:
            return candidate_id in self.table[turn_key]["candidates"]
        except KeyError:
            return True  # stored, and does not open

    def _turn(self, turn_key: str) -> dict[str, Any]:
        try:
            return dict(self.table[turn_key]["candidates"])
        except KeyError:
            return {}

    def __iter__(self) -> Iterator[Any]:
        """The keys as stored: a turn's value is one key (what iterating tables is for is
        counting and exporting what is stored)."""
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)

