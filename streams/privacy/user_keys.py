"""Every user's data key, kept wrapped by the master key in the `user_keys` table.

A user's content is sealed with the user's own data key wherever memstream keeps it — tables,
changelogs, the topics it writes, dead letters. The key is made when the user's first content
is sealed, and only while processing a record on the user's own partition
(`streams.privacy.placement`). A purge deletes it (`shred`): every sealed copy of the user's
content, wherever it lies, stops opening at once. The record keeps the purge's epoch
(`PurgeEpoch`), so a turn from before the purge is refused rather than stored again — a replay
of an old one (its event time) or one still in flight when the purge took effect (its produce
time).

The table's changelog carries only keys wrapped by the master key (which never enters Kafka);
after a purge the old wrapped key stays there until the topic is compacted, which
`CHANGELOG_CONFIGS` bounds (docs/privacy.md). The master key can be rotated
(`streams.privacy.rotation`): every key unwraps with any of the accepted master keys, and is
wrapped with the current one.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from streams.privacy import crypto
from streams.privacy.crypto import MasterKeys, SealError
from streams.privacy.placement import check_routed
from streams.tables import Table

HOUR_MS = 3_600_000
CHANGELOG_CONFIGS: dict[str, str] = {
    "cleanup.policy": "compact",
    "segment.ms": str(HOUR_MS),
    "max.compaction.lag.ms": str(HOUR_MS),
    "min.compaction.lag.ms": "0",
    "min.cleanable.dirty.ratio": "0.01",
}
"""Topic configs of the `user_keys` changelog: a record replaced by a later one of the same user
(a wrapped key replaced by a shred) becomes eligible for compaction within an hour of being
written (`max.compaction.lag.ms`; Kafka rolls the active segment on the next write after
min(`segment.ms`, `max.compaction.lag.ms`), and the cleaner then runs within its backoff).
Requested when Faust creates the topic (`streams.app.factory`)."""


@dataclass(frozen=True)
class PurgeEpoch:
    """When a user was purged: `purged_at` on the user's event-time line (the purge command's
    time, the user's clock), `shredded_at` on the wall clock (when the purge took effect)."""

    purged_at: datetime
    shredded_at: datetime | None

    def covers(self, ts: datetime, produced_at: float | None) -> bool:
        """Whether content dated `ts` (event time) and produced at `produced_at` (its record's
        timestamp, seconds since the epoch; None: unknown) comes from before the purge: dated
        no later than the purge, or produced before the purge took effect (a turn that was in
        flight, dated after the user's clock)."""
        if ts <= self.purged_at:
            return True
        return (produced_at is not None and self.shredded_at is not None
                and produced_at <= self.shredded_at.timestamp())


class UserKeys:
    """The `user_keys` table: user_id -> {"key": wrapped data key, "purged_at": ISO time,
    "shredded_at": ISO time}."""

    def __init__(self, table: Table, master_key: bytes | MasterKeys) -> None:
        self.table = table
        self.masters = MasterKeys.of(master_key)
        self._cache: dict[str, bytes] = {}
        self.before_shred: list[Callable[[], object]] = []
        """Called before a key is shredded: a write held for its user must be made with it
        first (`streams.pipeline.write_cache`)."""
        self.after_shred: list[Callable[[str], object]] = []
        """Called with the user once their key is shredded: what was opened with it and kept
        in memory is dropped (`streams.privacy.sealed.SealedTable`)."""

    @property
    def master_key(self) -> bytes:
        """The master key that wraps (the current one)."""
        return self.masters.current

    def forget_cache(self) -> None:
        """The table changed under this worker (a recovery after a rebalance)."""
        self._cache.clear()

    def _record(self, user_id: str) -> dict[str, Any]:
        return dict(self.table.get(user_id) or {})

    def data_key(self, user_id: str, create: bool = False) -> bytes | None:
        """The user's data key; made (only when `create`) if the user has none. Raises
        `MisroutedRecord` rather than make one for a record on another partition."""
        key = self._cache.get(user_id)
        if key is not None:
            return key
        record = self._record(user_id)
        if record.get("key"):
            key = unwrap(self.masters, user_id, record["key"])
        elif create:
            check_routed(user_id)
            key = crypto.new_key()
            record["key"] = crypto.seal(self.masters.current, key, _context(user_id))
            self.table[user_id] = record
        else:
            return None
        self._cache[user_id] = key
        return key

    def shred(self, user_id: str, purged_at: datetime, shredded_at: datetime | None = None) -> None:
        """Delete the user's data key, whatever it is; keep the purge's epoch (`shredded_at`:
        now, unless given). Raises `MisroutedRecord` for a record on another partition."""
        check_routed(user_id)
        for flush in self.before_shred:
            flush()
        self._cache.pop(user_id, None)
        self.table[user_id] = {"purged_at": purged_at.isoformat(),
                               "shredded_at": (shredded_at or wall_clock()).isoformat()}
        for forget in self.after_shred:
            forget(user_id)

    def purge_epoch(self, user_id: str) -> PurgeEpoch | None:
        """When the user was last purged; None if never."""
        record = self._record(user_id)
        if not record.get("purged_at"):
            return None
        shredded = record.get("shredded_at")
        return PurgeEpoch(datetime.fromisoformat(record["purged_at"]),
                          datetime.fromisoformat(shredded) if shredded else None)

    def purged_at(self, user_id: str) -> datetime | None:
        epoch = self.purge_epoch(user_id)
        return epoch.purged_at if epoch is not None else None

    def predates_purge(self, user_id: str, ts: datetime, produced_at: float | None) -> bool:
        """Whether content of the user dated `ts`, produced at `produced_at`, comes from before
        the user's purge (`PurgeEpoch.covers`); False for a user never purged."""
        epoch = self.purge_epoch(user_id)
        return epoch is not None and epoch.covers(ts, produced_at)

    def seal(self, user_id: str, plaintext: bytes) -> str:
        """`plaintext` sealed with the user's data key (made if the user has none)."""
        key = self.data_key(user_id, create=True)
        assert key is not None
        return crypto.seal(key, plaintext, user_id.encode("utf-8"))

    def seal_raw(self, user_id: str, plaintext: bytes) -> bytes:
        """`seal`, as bytes (not base64): for the tables' binary values."""
        key = self.data_key(user_id, create=True)
        assert key is not None
        return crypto.seal_raw(key, plaintext, user_id.encode("utf-8"))

    def open(self, user_id: str, sealed: str) -> bytes:
        """What `seal` sealed for `user_id`; raises `SealError` when the key is gone."""
        return crypto.open_sealed(self._opening_key(user_id), sealed, user_id.encode("utf-8"))

    def open_raw(self, user_id: str, sealed: bytes) -> bytes:
        """What `seal_raw` sealed for `user_id`; raises `SealError` when the key is gone."""
        return crypto.open_raw(self._opening_key(user_id), sealed, user_id.encode("utf-8"))

    def _opening_key(self, user_id: str) -> bytes:
        key = self.data_key(user_id)
        if key is None:
            raise SealError("the user has no data key (never had one, or was purged)")
        return key

    def seal_in_transit(self, user_id: str, plaintext: bytes) -> str:
        """Sealed with the master key: for a web handler that finds no data key for the user
        (it cannot write the table); the stage that opens it re-seals what it keeps."""
        return crypto.seal(self.masters.current, plaintext, _transit(user_id))

    def open_in_transit(self, user_id: str, sealed: str) -> bytes:
        for master in self.masters.accepted:
            try:
                return crypto.open_sealed(master, sealed, _transit(user_id))
            except SealError:
                continue
        raise SealError("the value does not open with any accepted master key")


def unwrap(masters: MasterKeys, user_id: str, wrapped: str) -> bytes:
    """The data key `wrapped` by one of the accepted master keys; raises `SealError`."""
    for master in masters.accepted:
        try:
            return crypto.open_sealed(master, wrapped, _context(user_id))
        except SealError:
            continue
    raise SealError("the user's key does not unwrap with any accepted master key")


def rewrapped(masters: MasterKeys, user_id: str, record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The user's `user_keys` record with its data key wrapped by the current master key; None
    when it needs no change (no key: never had one, or shredded; or wrapped by it already).
    Raises `SealError` for a key that no accepted master key unwraps."""
    wrapped = record.get("key")
    if not wrapped:
        return None
    try:
        crypto.open_sealed(masters.current, wrapped, _context(user_id))
        return None
    except SealError:
        pass
    key = unwrap(masters, user_id, wrapped)
    return {**record, "key": crypto.seal(masters.current, key, _context(user_id))}


def wall_clock() -> datetime:
    return datetime.now(timezone.utc)


def _context(user_id: str) -> bytes:
    return b"data-key:" + user_id.encode("utf-8")


def _transit(user_id: str) -> bytes:
    return b"transit:" + user_id.encode("utf-8")
