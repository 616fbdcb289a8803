"""Every user's data key, kept wrapped by the master key in the `user_keys` table.

A user's content is sealed with the user's own data key wherever memstream keeps it — tables,
changelogs, the topics it writes, dead letters. The key is made when the user's first content
is sealed. A purge deletes it (`shred`): every sealed copy of the user's content, wherever it
lies, stops opening at once. The record keeps `purged_at`, so a replayed turn from before the
purge is refused rather than stored again.

The table's changelog carries only keys wrapped by the master key (which never enters Kafka);
after a purge the old wrapped key stays there until the topic is compacted.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from streams.memory.tables import Table
from streams.privacy import crypto
from streams.privacy.crypto import SealError


class UserKeys:
    """The `user_keys` table: user_id -> {"key": wrapped data key, "purged_at": ISO time}."""

    def __init__(self, table: Table, master_key: bytes) -> None:
        self.table = table
        self._master = master_key
        self._cache: dict[str, bytes] = {}

    def forget_cache(self) -> None:
        """The table changed under this worker (a recovery after a rebalance)."""
        self._cache.clear()

    def _record(self, user_id: str) -> dict[str, Any]:
        return dict(self.table.get(user_id) or {})

    def data_key(self, user_id: str, create: bool = False) -> bytes | None:
        """The user's data key; made (only when `create`) if the user has none."""
        key = self._cache.get(user_id)
        if key is not None:
            return key
        record = self._record(user_id)
        if record.get("key"):
            key = crypto.open_sealed(self._master, record["key"], _context(user_id))
        elif create:
            key = crypto.new_key()
            record["key"] = crypto.seal(self._master, key, _context(user_id))
            self.table[user_id] = record
        else:
            return None
        self._cache[user_id] = key
        return key

    def shred(self, user_id: str, purged_at: datetime) -> None:
        """Delete the user's data key; keep when the purge happened."""
        self._cache.pop(user_id, None)
        self.table[user_id] = {"purged_at": purged_at.isoformat()}

    def purged_at(self, user_id: str) -> datetime | None:
        value = self._record(user_id).get("purged_at")
        return datetime.fromisoformat(value) if value else None

    def seal(self, user_id: str, plaintext: bytes) -> str:
        """`plaintext` sealed with the user's data key (made if the user has none)."""
        key = self.data_key(user_id, create=True)
        assert key is not None
        return crypto.seal(key, plaintext, user_id.encode("utf-8"))

    def open(self, user_id: str, sealed: str) -> bytes:
        """What `seal` sealed for `user_id`; raises `SealError` when the key is gone."""
        key = self.data_key(user_id)
        if key is None:
            raise SealError("the user has no data key (never had one, or was purged)")
        return crypto.open_sealed(key, sealed, user_id.encode("utf-8"))

    def seal_in_transit(self, user_id: str, plaintext: bytes) -> str:
        """Sealed with the master key: for a web handler that finds no data key for the user
        (it cannot write the table); the stage that opens it re-seals what it keeps."""
        return crypto.seal(self._master, plaintext, b"transit:" + user_id.encode("utf-8"))

    def open_in_transit(self, user_id: str, sealed: str) -> bytes:
        return crypto.open_sealed(self._master, sealed, b"transit:" + user_id.encode("utf-8"))


def _context(user_id: str) -> bytes:
    return b"data-key:" + user_id.encode("utf-8")
