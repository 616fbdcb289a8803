"""Sealing JSON values for a user, and tables whose values are sealed.

`Sealer` turns a JSON value into a `topics.sealed.Sealed` envelope and back. `SealedTable`
wraps a table (a Faust table in the worker, a dict in process): every value is stored sealed
for its user, in a binary envelope (`streams.privacy.table_values`), so the table's changelog
topic and its local store never hold a user's content in clear. A value whose user's key was
shredded reads as absent; its key is still `in` the table (the `applied` records of a purged
user keep blocking replays).
"""
from __future__ import annotations

import base64
import json
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from streams.privacy.crypto import SealError
from streams.privacy.table_values import StoredValue, compress, decompress, pack, unpack
from streams.privacy.user_keys import UserKeys
from streams.tables import ReadableItems, Table, key_text
from topics.sealed import Sealed

UserOf = Callable[[str, Any], str]
"""The user a table value belongs to, from its key (as text) and value."""
_MISSING = object()
OPENED_CACHE_BYTES = 4 * 1024 * 1024
"""The plaintext each sealed table keeps opened, in bytes (the least recently read value is
dropped first). Bounded by bytes, not values: a memory's record (its document, vectors and audit
list) is 5–20 KB and a thread's revision a few hundred bytes. Against 4,096 values a table, a
worker grew by 60 MB less over a drain of the six dev conversations, opening 0.5 values a turn
more (docs/decisions.md#opened-values-are-bounded-by-bytes, docs/capacity.md#what-the-rest-pays-for)."""


class Sealer:
    """Seals JSON values with the users' data keys (`UserKeys`)."""

    def __init__(self, keys: UserKeys) -> None:
        self.keys = keys

    def seal(self, user_id: str, value: Any) -> Sealed:
        """`value` sealed with the user's data key (made if the user has none)."""
        return Sealed(user_id=user_id, sealed=self.keys.seal(user_id, orjson.dumps(value)))

    def seal_for_transit(self, user_id: str, value: Any) -> Sealed:
        """Sealed with the user's key if the user has one, else with the master key: for a
        web handler, which cannot make a key (it cannot write a table)."""
        if self.keys.data_key(user_id) is not None:
            return self.seal(user_id, value)
        return Sealed(user_id=user_id, by="transit",
                      sealed=self.keys.seal_in_transit(user_id, orjson.dumps(value)))

    def open(self, envelope: Sealed) -> Any:
        """The value inside `envelope`; raises `SealError` when it does not open."""
        if envelope.by == "transit":
            return orjson.loads(self.keys.open_in_transit(envelope.user_id, envelope.sealed))
        return orjson.loads(self.keys.open(envelope.user_id, envelope.sealed))

    def seal_stored(self, user_id: str, plaintext: bytes) -> tuple[bytes, bytes]:
        """A table value (or a record) holding `plaintext` (JSON, UTF-8), compressed when that
        is shorter and sealed with the user's data key (`streams.privacy.table_values`), and
        its sealed bytes."""
        body, form = compress(plaintext)
        sealed = self.keys.seal_raw(user_id, body)
        return pack(user_id, sealed, form), sealed

    def open_stored(self, stored: StoredValue) -> bytes:
        """The JSON (UTF-8) inside a table value; raises `SealError` when it does not open."""
        if stored.by == "transit":
            return self.keys.open_in_transit(
                stored.user_id, base64.urlsafe_b64encode(stored.sealed).decode("ascii"))
        return decompress(self.keys.open_raw(stored.user_id, stored.sealed), stored.form)


class SealedTable(ReadableItems):
    """A table whose values are stored as `Sealed` envelopes of their user (`user_of`)."""

    def __init__(self, table: Table, sealer: Sealer, user_of: UserOf) -> None:
        self.table = table
        self.sealer = sealer
        self.user_of = user_of
        self._opened: OrderedDict[Any, tuple[bytes, bytes | None, bytes, str]] = OrderedDict()
        """key -> (sealed bytes, the data key it was sealed with, its plaintext, its user) of
        values read or written lately, least recently used first (`OPENED_CACHE_BYTES`): a stage
        reads the same documents many times per record, and opening (AES-GCM, zstd) is most of
        the cost. Checked on every read against the stored envelope and the user's current data
        key, so a change made elsewhere (a recovery) or a purge (the key shredded, or replaced
        by a new one) is never missed; and the value is parsed afresh each time. A purge also
        drops the user's values at once (`UserKeys.after_shred`): no plaintext of theirs stays."""
        self._opened_bytes = 0
        """The plaintext `_opened` holds, in bytes."""
        sealer.keys.after_shred.append(self._forget_user)

    def __getitem__(self, key: Any) -> Any:
        raw = self.table[key]
        try:
            stored = unpack(raw)
            opened = self._opened.get(key)
            data_key = self._data_key(stored)
            if opened is not None and opened[0] == stored.sealed and opened[1] is data_key:
                self._opened.move_to_end(key)
                return orjson.loads(opened[2])
            plaintext = self.sealer.open_stored(stored)
        except SealError:
            self._forget(key)
            raise KeyError(key) from None
        self._remember(key, stored.sealed, data_key, plaintext, stored.user_id)
        return orjson.loads(plaintext)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put_plaintext(key, self.user_of(key_text(key), value), orjson.dumps(value))

    def put_plaintext(self, key: Any, user_id: str, plaintext: bytes) -> None:
        """Store a value given as its JSON (UTF-8), sealed for `user_id` (its `user_of`), in the
        binary form (`streams.privacy.table_values`)."""
        self.table[key], sealed = self.sealer.seal_stored(user_id, plaintext)
        self._remember(key, sealed, self.sealer.keys.data_key(user_id), plaintext, user_id)

    def stamp(self, key: Any) -> tuple[bytes, bytes | None] | None:
        """What is stored under `key`, cheaply: its sealed bytes and the data key it opens with
        now (None: nothing). While the stamp is the same, so is the value (a new value is sealed
        with a new nonce), and it opens as it did: a reader may keep what it made of it."""
        raw = self.table.get(key)
        if raw is None:
            return None
        stored = unpack(raw)
        return stored.sealed, self._data_key(stored)

    def _data_key(self, stored: StoredValue) -> bytes | None:
        """The key the value opens with now (None: none, or the master key in transit)."""
        return None if stored.by == "transit" else self.sealer.keys.data_key(stored.user_id)

    def _remember(self, key: Any, sealed: bytes, data_key: bytes | None, plaintext: bytes,
                  user_id: str) -> None:
        self._forget(key)
        self._opened[key] = (sealed, data_key, plaintext, user_id)
        self._opened_bytes += len(plaintext)
        while self._opened_bytes > OPENED_CACHE_BYTES and len(self._opened) > 1:
            _, (_, _, dropped, _) = self._opened.popitem(last=False)
            self._opened_bytes -= len(dropped)

    def _forget_user(self, user_id: str) -> None:
        """Drop what was opened of `user_id`'s values (their key was just shredded)."""
        for key in [key for key, opened in self._opened.items() if opened[3] == user_id]:
            self._forget(key)

    def _forget(self, key: Any) -> None:
        opened = self._opened.pop(key, None)
        if opened is not None:
            self._opened_bytes -= len(opened[2])

    def __delitem__(self, key: Any) -> None:
        self._forget(key)
        del self.table[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.table)

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]  # as ReadableItems'
        """Every readable value in one scan of the table, opened without the opened-value
        cache: a whole-table read (the index rebuild after a start) would churn it, and reading
        key by key costs a Faust table a lookup in every partition's store per key."""
        for key, raw in self.table.items():
            try:
                plaintext = self.sealer.open_stored(unpack(raw))
            except SealError:
                continue  # a shredded user's value: absent, as `__getitem__` has it
            yield key, orjson.loads(plaintext)

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, key: object) -> bool:
        """Whether the key is stored at all, readable or not."""
        return key in self.table

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Remove the key, readable or not; return its value (or `default`)."""
        try:
            value = self[key]
        except KeyError:
            value = default
        if key in self.table:
            del self.table[key]
        if value is _MISSING:
            raise KeyError(key)
        return value


# --- who a table's values belong to ----------------------------------------------------------
def user_is_key(key: str, value: Any) -> str:
    """Tables keyed by user_id (`users`)."""
    return key


def user_first_in_key(key: str, value: Any) -> str:
    """Tables keyed by a structured key whose first part is the user (`streams.memory.tables`,
    `streams.pipeline.recent_events`)."""
    parts = json.loads(key)
    return str(parts[0])


def user_in_value(key: str, value: Any) -> str:
    """Documents that name their user (`memories`), or lists of them (`audit`)."""
    document = value[-1] if isinstance(value, list) else value
    return str(document["user_id"])


TABLE_OWNERS: dict[str, UserOf] = {
    "memories": user_in_value, "audit": user_in_value, "applied": user_first_in_key,
    "thread_revs": user_first_in_key, "buffers": user_first_in_key,
    "turn_log": user_first_in_key, "users": user_is_key, "recent_events": user_first_in_key,
}
"""Who the values of each sealed table belong to."""
