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

Faust opens one RocksDB database per table and partition (11 tables × the partitions a worker
holds), each with its own 2 GB block cache and up to three 64 MB memtables. A memtable keeps
every write until it is flushed at 64 MB, overwrites of one key included (a user's record is
written every turn), so a long-running worker's memory grew towards 64 MB for each database
written steadily: gigabytes, whatever its live data. Every database the worker opens now
shares one block cache of `TABLE_MEMORY_MB` and one write buffer manager that charges the
memtables to that cache and flushes the one being written when they pass half of it
(`BoundedRocksDBOptions`; RocksDB's way to bound several databases' memory, as Kafka Streams'
`BoundedMemoryRocksDBConfig` does), docs/decisions.md#rocksdb-shares-one-memory-budget.
"""
from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import rocksdict
from prometheus_client.metrics_core import GaugeMetricFamily
from prometheus_client.registry import Collector
from faust.stores import STORES
from faust.stores.rocksdb import RocksDBOptions
from faust.stores.rocksdb import Store as FaustRocksDBStore
from faust.types import TP

from streams.observability.metrics import REGISTRY

_collection_pending_on: asyncio.AbstractEventLoop | None = None
"""The loop a collection is queued on (a loop closed before it ran does not hold off the next)."""
TABLE_MEMORY_BYTES = 256 * 1024 * 1024
"""RocksDB's memory in a process, every table and partition together (`use_rocksdb_store`)."""
MEMTABLE_SHARE = 2
"""The memtables may take 1/`MEMTABLE_SHARE` of `TABLE_MEMORY_BYTES` before the one being
written is flushed; the block cache holds the rest."""


class TableMemory:
    """The block cache and write buffer manager every database of the process shares."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.cache = rocksdict.Cache(budget)
        self.write_buffers = rocksdict.WriteBufferManager.new_write_buffer_manager_with_cache(
            budget // MEMTABLE_SHARE, False, self.cache)  # no stall: the writer is the event loop


_memory: TableMemory | None = None


def table_memory() -> TableMemory:
    """This process's `TableMemory` for `TABLE_MEMORY_BYTES` (made on first use)."""
    global _memory
    if _memory is None or _memory.budget != TABLE_MEMORY_BYTES:
        _memory = TableMemory(TABLE_MEMORY_BYTES)
    return _memory


class TableMemoryCollector(Collector):
    """`memstream_table_memory_bytes{part}`, read at each scrape: `budget` (`TABLE_MEMORY_MB`),
    `total` (the shared block cache's usage, the memtables charged to it included) and
    `memtables` (what the write buffer manager counts); 0 before a database is open."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "memstream_table_memory_bytes",
            "RocksDB's memory in this process, every table and partition together: budget "
            "(TABLE_MEMORY_MB), total in use (block cache, memtables charged to it), memtables.",
            labels=["part"])
        memory = _memory
        family.add_metric(["budget"], TABLE_MEMORY_BYTES)
        family.add_metric(["total"], memory.cache.get_usage() if memory is not None else 0)
        family.add_metric(["memtables"], memory.write_buffers.get_usage() if memory is not None else 0)
        yield family


REGISTRY.register(TableMemoryCollector())


class BoundedRocksDBOptions(RocksDBOptions):  # type: ignore[misc]  # Faust's class is untyped
    """Faust's options for a database (`rocksdict`), with the process's shared block cache and
    write buffer manager (`TableMemory`, module doc) in place of a cache of its own."""

    def as_options(self) -> rocksdict.Options:
        options = super().as_options()
        if not self.use_rocksdict:
            return options
        memory = table_memory()
        table = rocksdict.BlockBasedOptions()  # as Faust's, but for the cache
        table.set_bloom_filter(self.bloom_filter_size, block_based=True)
        table.set_block_cache(memory.cache)
        table.set_index_type(rocksdict.BlockBasedIndexType.binary_search())
        options.set_block_based_table_factory(table)
        options.set_write_buffer_manager(memory.write_buffers)
        return options


class RocksDBStore(FaustRocksDBStore):
    """`rocksdb://` tables (`use_rocksdb_store`): Faust's store, collecting once a rebalance,
    raw keys encoded directly, its databases' memory shared (module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rocksdb_options = BoundedRocksDBOptions(**self.options, use_rocksdict=self.use_rocksdict)

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


def use_rocksdb_store(memory_bytes: int = TABLE_MEMORY_BYTES) -> None:
    """Have `rocksdb://` table stores be `RocksDBStore` in this process, their databases sharing
    `memory_bytes` (module doc)."""
    global TABLE_MEMORY_BYTES
    TABLE_MEMORY_BYTES = memory_bytes
    STORES.aliases["rocksdb"] = f"{__name__}:{RocksDBStore.__name__}"
