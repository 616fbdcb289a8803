"""A memory's document and its audit list in one table value: one changelog record per change.

Every change of a memory writes its document and appends to its audit list. Kept in two tables
(`memories`, `audit`), that was two sealings, two RocksDB puts and two changelog records per
change, a fifth of a turn's Kafka records (docs/decisions.md#a-memorys-document-and-audit-list-are-one-record). Here the
`memories` table holds a *memory record* per id:

    {"$record": 1 | 2, "user_id": …, "memory": <document> | null, "audit": [<entry>, …]}

and the stages see it through two views with the mappings they always had: `docs` (memory id
-> document) and `audit` (memory id -> entries, oldest first). A change writes both views, and
the write cache below them (`streams.pipeline.write_cache`) makes the one key once per batch.
A record may hold no document: a purged memory's content-free tombstone, and the markers that
are audited but are not memories (blocked topics, consent proposals); `docs` leaves those out.

Tables written before are read as they are: a `memories` value that is a bare document is the
document, and its audit list is the one in the old `audit` table (`legacy_audit`, read only).
The next write of that id makes a memory record of both, which from then on shadows the old
audit list; the `applied` records written before list writes per view, so their replays work.

A document with every field of `streams.memory.model.Memory` is stored *compact* (`"$record":
2`): the fields that hold their value in `OMITTED` are left out, and put back when it is read.
Most of a document's fields hold their default (no valence, no superseding memory, no purge
date, …); left out they are 6 % of its record, deflated, in every rewrite of a memory. A
document missing any field is stored as it is (`"$record": 1`), as every record before was.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from streams.memory.model import Memory
from streams.tables import ReadableItems, Table

RECORD_FORMAT = 1
"""A memory record whose document is stored as it is."""
COMPACT_FORMAT = 2
"""A memory record whose document is stored without the fields that hold their `OMITTED` value."""
_FORMAT_FIELD = "$record"

OMITTED: dict[str, Any] = {
    "category": "Other", "tags": [], "entities": [], "entity_key": None, "source": "chat",
    "trust_score": 0.7, "importance": 3, "valence": None, "intensity": None, "pinned": False,
    "private": False, "state": "active", "last_verified_at": None, "access_count": 0,
    "valid_from": None, "valid_to": None, "event_start": None, "event_end": None,
    "superseded_by": None, "purge_at": None, "related_ids": [], "relations": {},
    "consolidated_from": [], "source_turn_ids": [], "agent_id": None, "run_id": None,
    "actor_id": None, "role": None, "thread_id": None, "date_iso": None, "week": None,
    "year": None, "version": 1, "embedding_b64": None, "context_b64": None,
    "pending_change": None,
}
"""What a field left out of a compact document holds. Part of the format, not read from the
model: a default the model changes later must not change what records written before say (a
test holds these to the model's defaults, so a change there is a new format)."""
_COMPLETE = frozenset(Memory.model_fields)
"""The fields a document must have to be stored compact (so that every field left out of it
was there, with its `OMITTED` value)."""


def is_memory_record(value: Any) -> bool:
    """Whether a `memories` value is a memory record (else a bare document written before)."""
    return isinstance(value, dict) and value.get(_FORMAT_FIELD) in (RECORD_FORMAT, COMPACT_FORMAT)


def memory_record(memory: dict[str, Any] | None, audit: list[dict[str, Any]]) -> dict[str, Any]:
    """The value of a memory with document `memory` (None: none) and audit list `audit`; its
    user (which the sealed table seals it for) is the document's, else the last entry's. A
    document with every field is stored compact (module doc)."""
    owner = memory if memory is not None else audit[-1]
    compact = compact_document(memory)
    if compact is not None:
        return {_FORMAT_FIELD: COMPACT_FORMAT, "user_id": owner["user_id"], "memory": compact,
                "audit": audit}
    return {_FORMAT_FIELD: RECORD_FORMAT, "user_id": owner["user_id"], "memory": memory,
            "audit": audit}


def compact_document(document: Any) -> dict[str, Any] | None:
    """`document` without the fields that hold their `OMITTED` value; None when it is not a
    document with every field of `Memory` (then it is kept as it is)."""
    if not isinstance(document, dict) or not _COMPLETE <= document.keys():
        return None
    return {k: v for k, v in document.items() if not _omitted(k, v)}


def expanded_document(compact: dict[str, Any]) -> dict[str, Any]:
    """A document from `compact_document`, its left-out fields put back (a copy)."""
    full = dict(compact)
    for name, value in OMITTED.items():
        if name not in full:
            full[name] = [] if value == [] else {} if value == {} else value
    return full


def document_of(record: dict[str, Any]) -> dict[str, Any] | None:
    """The document of a memory record (`is_memory_record`), its left-out fields put back."""
    memory = record["memory"]
    if memory is None or record[_FORMAT_FIELD] != COMPACT_FORMAT:
        return memory
    return expanded_document(memory)


def _omitted(name: str, value: Any) -> bool:
    """Whether field `name` holds its `OMITTED` value (of the same JSON type: 0 is not False)."""
    kept = OMITTED.get(name, _NOT_OMITTED)
    return type(value) is type(kept) and value == kept


_NOT_OMITTED = object()


class MemoryRecords:
    """The `memories` table of memory records, with the old `audit` table read where a record
    was written before (module doc)."""

    def __init__(self, table: Table, legacy_audit: Table | None = None) -> None:
        self.table = table
        self.legacy_audit = legacy_audit
        self.docs = DocumentsView(self)
        self.audit = AuditView(self)

    def read(self, key: Any) -> tuple[dict[str, Any] | None, list[dict[str, Any]] | None]:
        """The document and the audit list under `key` (None: none, or unreadable)."""
        value = _get(self.table, key)
        if is_memory_record(value):
            return document_of(value), value["audit"] or None
        return value, self._legacy_list(key)

    def document(self, key: Any) -> dict[str, Any] | None:
        """The document under `key` alone: `read` without the old `audit` table's read, which
        a document never needs (every `MemoryState.memory`, on the hot path)."""
        value = _get(self.table, key)
        return document_of(value) if is_memory_record(value) else value

    def _legacy_list(self, key: Any) -> list[dict[str, Any]] | None:
        return _get(self.legacy_audit, key) if self.legacy_audit is not None else None

    def write(self, key: Any, memory: dict[str, Any] | None,
              audit: list[dict[str, Any]] | None) -> None:
        """Store the document and the audit list of `key`; neither: remove the key, and its old
        audit list with it (which would otherwise show through)."""
        if memory is None and not audit:
            self.table.pop(key, None)
            if self.legacy_audit is not None:
                self.legacy_audit.pop(key, None)
            return
        self.table[key] = memory_record(memory, list(audit or []))


class _View(ReadableItems):
    """One part of the memory records, as a mapping."""

    def __init__(self, records: MemoryRecords) -> None:
        self.records = records

    def _part(self, key: Any) -> Any:
        raise NotImplementedError

    def __getitem__(self, key: Any) -> Any:
        part = self._part(key)
        if part is None:
            raise KeyError(key)
        return part

    def __iter__(self) -> Iterator[Any]:
        for key in list(self._keys()):
            if self._part(key) is not None:
                yield key

    def _keys(self) -> Iterator[Any]:
        return iter(self.records.table)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        return self._part(key) is not None

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]  # one read a key, as ReadableItems' but without its second
        for key in list(self._keys()):
            part = self._part(key)
            if part is not None:
                yield key, part


class DocumentsView(_View):
    """Memory id -> document (the `memories` table as the stages have always read it)."""

    def _part(self, key: Any) -> Any:
        return self.records.document(key)

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]  # as _View's
        """Every document in one scan of the records (the index rebuild reads them all)."""
        for key, value in self.records.table.items():
            document = document_of(value) if is_memory_record(value) else value
            if document is not None:
                yield key, document

    def __setitem__(self, key: Any, value: Any) -> None:
        self.records.write(key, value, self.records.read(key)[1])

    def __delitem__(self, key: Any) -> None:
        memory, audit = self.records.read(key)
        if memory is None:
            raise KeyError(key)
        self.records.write(key, None, audit)


class AuditView(_View):
    """Memory id -> audit entries, oldest first (the `audit` table as the stages have always
    read it)."""

    def _part(self, key: Any) -> Any:
        return self.records.read(key)[1]

    def _keys(self) -> Iterator[Any]:
        yield from self.records.table
        if self.records.legacy_audit is not None:
            yield from (key for key in self.records.legacy_audit if key not in self.records.table)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.records.write(key, self.records.read(key)[0], value)

    def __delitem__(self, key: Any) -> None:
        memory, audit = self.records.read(key)
        if audit is None:
            raise KeyError(key)
        self.records.write(key, memory, None)


def _get(table: Table, key: Any) -> Any:
    """`table[key]`, None when absent or unreadable (a shredded user's value)."""
    try:
        return table[key]
    except KeyError:
        return None
