"""What each candidate and command did, kept in the `applied` table.

Processing is at-least-once: a record can arrive again after a crash or a rebalance. Its
outcome and the events it produced are remembered under a deterministic key, so a replay
changes nothing and re-sends the identical events (same `event_id`).

A candidate's table writes are made as one (`WriteSet`): held back while it is applied, then
listed in its `applied` record — each with a digest of the value it replaces — before they are
made. A worker killed in between leaves the record; its replay makes the writes that did not
land (`redo`). So does the replay of a candidate whose writes landed in the local store but not
in the changelog, which Faust's recovery then rolls back to an older value: a write is made
again wherever the key still holds the value it replaced (and only there: a key someone changed
since is left alone, and so is everything when an old turn is re-sent much later).

What the replayed record itself carries is not listed again (`Carried`): a memory created from
a candidate stores the candidate's embedding and context vectors, two thirds of its document;
its `applied` record names them instead, and a replay, which has the candidate at hand, puts
them back.
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Iterator, Mapping, MutableMapping, Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import orjson

from streams.errors import MemstreamError
from streams.memory.memory_records import (AuditView, DocumentsView, MemoryRecords, compact_document,
                                           expanded_document)
from streams.memory.tables import MemoryTables, Table
from topics.events import MemoryEvent
from topics.progress import Outcome

WRITTEN_TABLES = ("memories", "users", "thread_revs", "audit")
"""The tables a candidate writes (besides its own `applied` record)."""
Carried = Mapping[str, Any]
"""Values the record being applied carries, by name (e.g. the candidate's `vector_b64`, a
string, or a turn as its thread's buffer keeps it, an object): a listed write names them
(`{"$carried": name}`) instead of repeating them."""
_CARRIED = "$carried"
log = logging.getLogger(__name__)


@dataclass
class Applied:
    """What a candidate or command did: its outcome, the memory it touched, the events to send."""

    outcome: Outcome  # created | updated | superseded | duplicate (candidates); applied (commands)
    memory_id: str
    events: list[MemoryEvent] = field(default_factory=list)
    similarity: float | None = None
    replayed: bool = False


def prior(applied: Table, key: str) -> Applied | None:
    """The outcome recorded under `key` the first time, marked as a replay; None if new.

    A record that is there but no longer opens belongs to a purged user: the replay changes
    nothing either (outcome "purged", no events).
    """
    if key not in applied:
        return None
    record = applied.get(key)
    if record is None:
        return Applied("purged", "", [], replayed=True)
    events = [MemoryEvent.model_validate(e) for e in record.get("events", [])]
    return Applied(record["outcome"], record["memory_id"], events, replayed=True)


def remember(applied: Table, key: str, result: Applied, writes: list[list[Any]] | None = None) -> None:
    """Record `result` under `key`, events included (and the writes made, see `WriteSet`), for
    replays."""
    applied[key] = {"outcome": result.outcome, "memory_id": result.memory_id,
                    "events": [e.model_dump(mode="json") for e in result.events],
                    **({"writes": writes} if writes is not None else {})}


def digest(value: Any) -> str:
    """A short fingerprint of a table value (None: the key is absent): the first
    `DIGEST_CHARS` hex digits of the SHA-256 of its sorted JSON (`_hexdigest`)."""
    return _hexdigest(value)[:DIGEST_CHARS]


def _hexdigest(value: Any) -> str:
    """The SHA-256 of `value`'s sorted JSON, in hex. (orjson: the stdlib's encoder was a quarter
    of a candidate's CPU.) Hashed in pieces shorter than the size at which hashlib lets the GIL
    go (`_HASH_PIECE`): a memory document is longer, and letting the GIL go costs the event loop
    a wait for it whenever the embedder's threads want it."""
    data = memoryview(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    hashed = hashlib.sha256()
    for start in range(0, len(data), _HASH_PIECE):
        hashed.update(data[start:start + _HASH_PIECE])
    return hashed.hexdigest()


DIGEST_CHARS = 16
"""64 bits: a digest is only ever compared with the one value a key holds now, where a chance
match is 2^-64; every listed write holds two, in every `applied`, `turn_log` and lifecycle
record. Records written before hold 32 digits, and are compared by their own length
(`_holds`)."""


def _holds(current: str, recorded: str) -> bool:
    """Whether a key whose value's full digest is `current` holds the value whose digest was
    recorded as `recorded` (of any length: 32 digits before, `DIGEST_CHARS` now)."""
    return len(recorded) >= DIGEST_CHARS and current.startswith(recorded)


_HASH_PIECE = 2047
"""hashlib releases the GIL while it hashes 2,048 bytes or more at once (HASHLIB_GIL_MINSIZE)."""


def patch_of(before: Any, after: Any) -> dict[str, Any]:
    """What turns `before` into `after`, compactly: per field for documents; for lists, the
    entries dropped from the front and those inserted (a log that grows, a sorted list of ids
    that gains one); else the whole value, a memory's document compact
    (`streams.memory.memory_records.compact_document`)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return {"fields": {k: patch_of(before.get(k), v) for k, v in after.items()
                           if k not in before or before[k] != v},
                "unset": [k for k in before if k not in after]}
    if isinstance(before, list) and isinstance(after, list):
        for dropped in range(len(before) + 1):
            inserted = _insertions(before[dropped:], after)
            if inserted is not None:
                return {"drop": dropped, "insert": inserted}
    compact = compact_document(after)
    return {"value": after} if compact is None else {"document": compact}


def _insertions(before: list[Any], after: list[Any]) -> list[list[Any]] | None:
    """[position in `after`, entry] of the entries `after` adds to `before`, if all it does is add."""
    inserted, matched = [], 0
    for position, entry in enumerate(after):
        if matched < len(before) and before[matched] == entry:
            matched += 1
        else:
            inserted.append([position, entry])
    return inserted if matched == len(before) else None


def patched(value: Any, patch: dict[str, Any]) -> Any:
    """`value` with `patch` (from `patch_of(value, …)`) applied."""
    if "fields" in patch:
        kept = {k: v for k, v in value.items() if k not in patch["unset"]}
        return {**kept, **{k: patched(kept.get(k), sub) for k, sub in patch["fields"].items()}}
    if "insert" in patch:
        out = list(value[patch["drop"]:])
        for position, entry in patch["insert"]:
            out.insert(position, entry)
        return out
    if "document" in patch:
        return expanded_document(patch["document"])
    return patch["value"]


_DELETED = object()
"""A held deletion (`HeldTable`)."""


class HeldTable(MutableMapping[Any, Any]):
    """A table whose writes (and deletions) are held in `writes` (and read back from there)
    until made."""

    def __init__(self, table: Table, writes: dict[Any, Any]) -> None:
        self.table = table
        self.writes = writes

    def __getitem__(self, key: Any) -> Any:
        if key in self.writes:
            value = self.writes[key]
            if value is _DELETED:
                raise KeyError(key)
            return value
        return self.table[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.writes[key] = value

    def __delitem__(self, key: Any) -> None:
        if key not in self:
            raise KeyError(key)
        self.writes[key] = _DELETED

    def __contains__(self, key: object) -> bool:
        if key in self.writes:
            return self.writes[key] is not _DELETED
        return key in self.table

    def __iter__(self) -> Iterator[Any]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)

    def listed(self, before: Mapping[Any, Any] | None = None) -> list[list[Any]]:
        """The held writes as [key, *`change`] (a deletion writes None); `before`: what some
        keys hold now, read already (the others are read from `table`)."""
        known = before or {}
        return [[key, *change(known[key] if key in known else self.table.get(key), left_by(value))]
                for key, value in self.writes.items()]

    def make(self, skip: AbstractSet[Any] = frozenset()) -> None:
        """Make the held writes in `table` (but those of the keys in `skip`)."""
        for key, value in self.writes.items():
            if key in skip:
                continue
            if value is _DELETED:
                self.table.pop(key, None)
            else:
                self.table[key] = value


def left_by(value: Any) -> Any:
    """What a held write leaves under its key (None: a deletion)."""
    return None if value is _DELETED else value


class WriteSet:
    """The writes of one candidate (or one lifecycle run) to `names` of the tables: `tables`
    holds them back; `commit` makes them."""

    def __init__(self, tables: MemoryTables, names: tuple[str, ...] = WRITTEN_TABLES) -> None:
        self.base = tables
        self.held = {name: HeldTable(getattr(tables, name), {}) for name in names}
        self.tables = dataclasses.replace(tables, **self.held)
        docs, audit = self.held.get("memories"), self.held.get("audit")
        self._records: MemoryRecords | None = None
        if (docs is not None and audit is not None and isinstance(docs.table, DocumentsView)
                and isinstance(audit.table, AuditView) and docs.table.records is audit.table.records):
            self._records = docs.table.records
        """The memory records both `memories` and `audit` are views of, when they are: a memory
        whose document and audit list both changed is then read once to be listed and written
        once (`streams.memory.memory_records`: one value holds both), not once per view."""

    def _both_views(self) -> set[Any]:
        """The memories whose document and audit list are both written (none without records)."""
        if self._records is None:
            return set()
        return self.held["memories"].writes.keys() & self.held["audit"].writes.keys()

    def listed(self, carried: Carried | None = None) -> list[list[Any]]:
        """The held writes as [table, key, *`change`], naming the `carried` values they hold."""
        before: dict[str, dict[Any, Any]] = {"memories": {}, "audit": {}}
        if self._records is not None:
            for key in self._both_views():
                before["memories"][key], before["audit"][key] = self._records.read(key)
        writes = [[name, *write] for name, held in self.held.items()
                  for write in held.listed(before.get(name))]
        if not carried:
            return writes
        return [[name, key, replaced, written, named(patch, carried)]
                for name, key, replaced, written, patch in writes]

    def commit(self, key: str, result: Applied, carried: Carried | None = None) -> None:
        """Record `result` and the held writes under `key` (naming the `carried` values), then
        make the writes.

        The writes are made directly: nothing ran between listing them and making them, so
        every key still holds the value its write replaces (`redo` is for replays)."""
        remember(self.base.applied, key, result, self.listed(carried))
        self.make()

    def make(self) -> None:
        """Make the held writes (without recording them). A memory's document and audit list
        written together are one write of its record: what the two views' writes in turn
        leave (`MemoryRecords.write`: neither removes the record)."""
        both = self._both_views()
        if self._records is not None:
            for key in both:
                self._records.write(key, left_by(self.held["memories"].writes[key]),
                                    left_by(self.held["audit"].writes[key]))
        for name, held in self.held.items():
            held.make(both if name in ("memories", "audit") else frozenset())


def change(before: Any, after: Any) -> list[Any]:
    """A write from `before` to `after` as `redo_change` takes it: [digest of the value
    replaced, digest of the value written, patch from one to the other]."""
    return [digest(before), digest(after), patch_of(before, after)]


def redo_change(table: Table, key: Any, write: list[Any]) -> Any:
    """Make a recorded write (`change`) again if `key` still holds the value it replaced, or
    write again (to the changelog) the value still in place; return the value written, or None
    when the key holds something else (changed since: left alone) or the write was a deletion
    (made again)."""
    replaced, written, patch = write
    current = table.get(key)
    now = _hexdigest(current)
    in_place = _holds(now, written)
    if not (in_place or _holds(now, replaced)):
        return None
    value = current if in_place else patched(current, patch)
    if value is None:
        table.pop(key, None)
        return None
    table[key] = value
    return value


def change_naming(before: Any, after: Any, carried: Carried) -> list[Any]:
    """`change`, its patch naming the `carried` values it holds (`named`)."""
    replaced, written, patch = change(before, after)
    return [replaced, written, named(patch, carried)]


def named(patch: Any, carried: Carried) -> Any:
    """`patch` with each string or object that is a carried value replaced by its name
    (`{"$carried": name}`; `redo` and `redo_naming` put the values back)."""
    strings = {value: {_CARRIED: name} for name, value in carried.items() if isinstance(value, str)}
    objects = [(value, {_CARRIED: name}) for name, value in carried.items() if isinstance(value, dict)]
    return _named(patch, strings, objects)


def _named(patch: Any, strings: Mapping[str, dict[str, str]],
           objects: list[tuple[dict[str, Any], dict[str, str]]]) -> Any:
    if isinstance(patch, str):
        return strings.get(patch, patch)
    if isinstance(patch, dict):
        for value, name in objects:
            if patch == value:
                return name
        return {k: _named(v, strings, objects) for k, v in patch.items()}
    if isinstance(patch, list):
        return [_named(v, strings, objects) for v in patch]
    return patch


class _NotCarried(MemstreamError, LookupError):
    """A listed write names a value the replayed record does not carry."""


def _restored(patch: Any, carried: Carried) -> Any:
    """`patch` with each carried value's name replaced by the value (`_named` undone); raises
    `_NotCarried` when the record does not carry it."""
    if isinstance(patch, dict):
        if set(patch) == {_CARRIED}:
            if patch[_CARRIED] not in carried:
                raise _NotCarried(patch[_CARRIED])
            return carried[patch[_CARRIED]]
        return {k: _restored(v, carried) for k, v in patch.items()}
    if isinstance(patch, list):
        return [_restored(v, carried) for v in patch]
    return patch


def redo_naming(table: Table, key: Any, write: list[Any], carried: Carried, name: str) -> Any:
    """`redo_change` of a write to table `name` listed by `change_naming`, with the `carried`
    values put back; a write naming a value not carried is left undone (None)."""
    restored = _restored_write(name, write, carried)
    return None if restored is None else redo_change(table, key, restored)


def _restored_write(name: str, write: list[Any], carried: Carried) -> list[Any] | None:
    """`write` (a `change` to table `name`) with the `carried` values it names put back; None,
    logged, when it names one the replayed record no longer carries."""
    replaced, written, patch = write
    try:
        return [replaced, written, _restored(patch, carried)]
    except _NotCarried as missing:
        log.warning("a replay cannot redo a %s write: its record no longer carries %s",
                    name, missing)
        return None


def redo(tables: MemoryTables, writes: list[list[Any]],
         carried: Carried | None = None) -> list[tuple[str, Any]]:
    """`redo_change` each of the writes of a `WriteSet`, with the values they name from
    `carried` (the replayed record's); return the (table, value) written (a key deleted again
    is not listed). A write naming a value the record no longer carries (a turn re-sent whose
    embedding failed this time) is left undone rather than made without it."""
    made = []
    for name, key, *write in writes:
        value = redo_naming(getattr(tables, name), key, write, carried or {}, name)
        if value is not None:
            made.append((name, value))
    return made


def replay(tables: MemoryTables, key: str,
           carried: Carried | None = None) -> tuple[Applied | None, list[tuple[str, Any]]]:
    """`prior` of a candidate, with the writes its replay made again (`redo`, with the values
    the candidate carries)."""
    result = prior(tables.applied, key)
    record = tables.applied.get(key) if result is not None else None
    return result, redo(tables, record.get("writes", []), carried) if record else []
