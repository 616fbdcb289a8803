"""The stages' table writes, held for a batch and made once per key when it ends.

A batch often writes one key many times: a user's clock and counters, a thread's revision and
change log, a thread's turn buffer, a memory created and then linked, its audit list growing
twice. In the worker each write is a sealing (AES-GCM), a RocksDB put and a changelog record.
Like Kafka Streams' record cache, `WriteCache` keeps the latest value of each key written
during a batch and makes it once when the stage's batch ends (`flush`): one sealing and one
changelog record per key per batch instead of one per write.

Reads see the held values (`CachedTable`), so nothing in the worker sees the difference. A
held value is kept as JSON bytes: a caller that changes a value it read or wrote does not
change what is held, as with the sealed tables, whose reads parse afresh.

Why this keeps the guarantees:
- A batch's records are acked (their offsets become committable) only after the stage returns
  from the batch, and the stage flushes before it returns: a worker that dies with writes held
  has not acked their records, which are processed again.
- Each write is made in the scope of the record that made it last (`ScopeCapture`): it goes to
  that record's changelog partition, as if it had been made then.
- The writes are made table by table in the order the tables were added, `applied` first: a
  candidate's outbox record (`streams.memory.applied`) is still made before the writes it lists.
  Several candidates' writes to one key fold into the last value; a replay redoes them in turn
  order (each checks the value it replaces), so a crash between two flushed keys is repaired.
- The user's data key is made (or found) when the value is written, not at the flush, so a
  record on the wrong partition is refused while it is processed (`MisroutedRecord`). A purge
  flushes before it shreds a key (`UserKeys.before_shred`): a value held for the user is made
  with the old key, which the shred then makes unreadable, as if it had been written at once.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import orjson

from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.privacy.sealed import SealedTable
from streams.tables import ReadableItems, key_text

log = logging.getLogger(__name__)
MAX_HELD = 20_000
"""Keys a table holds at most: one more flushes every table (a caller that never ends a batch,
a tool seeding a store, must not hold writes without bound; a stage's batch holds far fewer)."""
_DELETED = object()
"""A held deletion."""
_MISSING = object()
_HELD_WRITES = metrics.TABLE_WRITES.labels(phase="held")
"""The counter of held writes (its labelled child, looked up once: a batch holds thousands)."""


@dataclass(frozen=True)
class ScopeCapture:
    """How a held write remembers the record it was made for, and how the flush re-enters that
    record's scope: in the worker, the current Faust event (whose partition the changelog write
    goes to); in process, nothing."""

    current: Callable[[], Any]
    """The scope being processed now (None: none)."""
    enter: Callable[[Any], AbstractContextManager[object]]
    """Re-enter a scope `current` returned."""


NO_CAPTURE = ScopeCapture(current=lambda: None, enter=lambda scope: nullcontext())
"""In process and in tests: writes need no scope."""


@dataclass
class _Held:
    """A held write: the value as JSON bytes (or `_DELETED`), its user, the scope it was made in."""

    data: Any
    user_id: str | None
    scope: Any


class CachedTable(ReadableItems):
    """A sealed table whose writes are held until `WriteCache.flush` (module doc)."""

    def __init__(self, table: SealedTable, cache: WriteCache) -> None:
        self.table = table
        self.cache = cache
        self.held: dict[Any, _Held] = {}

    def __getitem__(self, key: Any) -> Any:
        held = self.held.get(key)
        if held is None:
            return self.table[key]
        if held.data is _DELETED:
            raise KeyError(key)
        return orjson.loads(held.data)

    def __setitem__(self, key: Any, value: Any) -> None:
        user_id = self.table.user_of(key_text(key), value)
        # The user's key is made now, inside the record (whose partition it checks).
        self.table.sealer.keys.data_key(user_id, create=True)
        self._hold(key, _Held(orjson.dumps(value), user_id, self.cache.capture.current()))

    def __delitem__(self, key: Any) -> None:
        if key not in self:
            raise KeyError(key)
        self._hold(key, _Held(_DELETED, None, self.cache.capture.current()))

    def _hold(self, key: Any, held: _Held) -> None:
        if key not in self.held and len(self.held) >= MAX_HELD:
            self.cache.flush()
        self.held[key] = held
        _HELD_WRITES.inc()

    def __contains__(self, key: object) -> bool:
        """Whether the key is held or stored at all, readable or not (`SealedTable`)."""
        held = self.held.get(key)
        if held is not None:
            return held.data is not _DELETED
        return key in self.table

    def __iter__(self) -> Iterator[Any]:
        for key in self.table:
            held = self.held.get(key)
            if held is None or held.data is not _DELETED:
                yield key
        for key, held in list(self.held.items()):
            if held.data is not _DELETED and key not in self.table:
                yield key

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]  # as ReadableItems'
        """The stored values in one scan (`SealedTable.items`), each replaced by its held write
        if one is held, then the held values of keys not stored yet."""
        for key, value in self.table.items():
            held = self.held.get(key)
            if held is None:
                yield key, value
            elif held.data is not _DELETED:
                yield key, orjson.loads(held.data)
        for key, held in list(self.held.items()):
            if held.data is not _DELETED and key not in self.table:
                yield key, orjson.loads(held.data)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Remove the key, readable or not; return its value (or `default`)."""
        value = self.get(key, default)
        if key in self:
            del self[key]
        if value is _MISSING:
            raise KeyError(key)
        return value

    def flush(self) -> int:
        """Make the held writes, each in its scope; return how many were made. A write that
        fails is logged and counted, and the others are made."""
        made = 0
        while self.held:
            key = next(iter(self.held))
            held = self.held.pop(key)
            try:
                with self.cache.capture.enter(held.scope):
                    if held.data is _DELETED:
                        if key in self.table:
                            del self.table[key]
                    else:
                        self.table.put_plaintext(key, held.user_id or "", held.data)
                made += 1
            except Exception as exc:  # noqa: BLE001 - one key's failure must not hold the others back
                metrics.STAGE_ERRORS.labels(stage="tables", error=type(exc).__name__).inc()
                # The key names a user: only the failure is logged.
                log.error("a held table write failed at the batch's end: %s", describe_failure(exc))
        return made


class WriteCache:
    """The held writes of every cached table, made together by `flush`."""

    def __init__(self, capture: ScopeCapture = NO_CAPTURE) -> None:
        self.capture = capture
        self.tables: list[CachedTable] = []

    def table(self, table: SealedTable) -> CachedTable:
        """`table` with its writes held here (flushed in the order tables are added)."""
        cached = CachedTable(table, self)
        self.tables.append(cached)
        return cached

    def pending(self) -> int:
        """How many writes are held."""
        return sum(len(table.held) for table in self.tables)

    def flush(self) -> int:
        """Make every held write, table by table; return how many were made."""
        made = sum(table.flush() for table in self.tables)
        if made:
            metrics.TABLE_WRITES.labels(phase="flushed").inc(made)
        return made
