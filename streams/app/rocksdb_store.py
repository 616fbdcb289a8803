"""Faust's RocksDB table store: without a full garbage collection per table at each rebalance,
and with a table's raw keys encoded directly.

`faust.stores.rocksdb.Store.revoke_partitions` drops the databases of the revoked partitions
and then runs `gc.collect()`, so that a database held in a reference cycle is closed before
the process may open it again. It does so for every table (12 in a worker) on every
rebalance, whether or not the table dropped anything: a worker joining made each worker run 12
full collections with its event loop held, 75–80 ms each for a worker that had just started
(its imports are not yet frozen out of the collector's scans: `streams.memory.store`), and
more the more objects a long-running worker holds.

`RocksDBStore` drops the same databases and runs one full collection, after the rebalance's
callbacks, only when some table dropped one. Nothing reopens a revoked partition's database
within the rebalance that revoked it, so the collection still comes before any reopening.

The worker's tables have raw keys (`key_type=bytes`: code indexes them with str, encoded as
UTF-8). Faust encodes each key through its serializer registry (codec lookup, `want_bytes`)
on every read, write and membership test, about 45 times a turn; `RocksDBStore._encode_key`
gives the same bytes without it. Tables with other key serializers keep Faust's path.
"""
from __future__ import annotations

import asyncio
import gc
from typing import Any

from faust.stores import STORES
from faust.stores.rocksdb import Store as FaustRocksDBStore
from faust.types import TP

_collection_pending_on: asyncio.AbstractEventLoop | None = None
"""The loop a collection is queued on (a loop closed before it ran does not hold off the next)."""


class RocksDBStore(FaustRocksDBStore):
    """`rocksdb://` tables (`use_rocksdb_store`): Faust's store, collecting once a rebalance,
    raw keys encoded directly (module doc)."""

    def _encode_key(self, key: Any) -> bytes:
        if self.key_serializer == "raw":  # Faust's raw codec: bytes as they are, str as UTF-8
            if isinstance(key, bytes):
                return key
            if isinstance(key, str):
                return key.encode()
        encoded: bytes = super()._encode_key(key)
        return encoded

    def revoke_partitions(self, table: Any, tps: set[TP]) -> None:
        dropped = False
        for tp in tps:
            if tp.topic in table.changelog_topic.topics and self._dbs.pop(tp.partition, None) is not None:
                self.logger.info(f"closing db {tp.topic} partition {tp.partition}")
                dropped = True
        if dropped:
            collect_after_rebalance()


def collect_after_rebalance() -> None:
    """One full collection once the running callbacks are done (at once outside a loop),
    however many tables ask for it in the meantime."""
    global _collection_pending_on
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        gc.collect()
        return
    if _collection_pending_on is loop:
        return
    _collection_pending_on = loop

    def collect() -> None:
        global _collection_pending_on
        _collection_pending_on = None
        gc.collect()
    loop.call_soon(collect)


def use_rocksdb_store() -> None:
    """Have `rocksdb://` table stores be `RocksDBStore` in this process."""
    STORES.aliases["rocksdb"] = f"{__name__}:{RocksDBStore.__name__}"
