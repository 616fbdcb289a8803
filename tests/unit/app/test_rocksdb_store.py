"""`rocksdb://` tables collect garbage once a rebalance, not once a table (streams/app/rocksdb_store.py)."""
from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path

import faust
import pytest
from faust.types import TP
from prometheus_client.parser import text_string_to_metric_families

from streams.observability import metrics
from streams.app.rocksdb_store import TABLE_MEMORY_BYTES, RocksDBStore, table_memory, use_rocksdb_store


@pytest.fixture()
def full_collections() -> Iterator[list[int]]:
    """The generation-2 collections that end while the test runs; the automatic ones are off
    meanwhile, so only those asked for (`gc.collect`) count."""
    ended: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] == 2:
            ended.append(info["collected"])
    was_enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(count)
    try:
        yield ended
    finally:
        gc.callbacks.remove(count)
        if was_enabled:
            gc.enable()


def _stores(tmp_path: Path, tables: int = 3,
            memory_bytes: int = TABLE_MEMORY_BYTES) -> list[tuple[faust.Table, RocksDBStore]]:
    """Real RocksDB tables of a Faust app, each with its two partitions' databases open, sharing
    `memory_bytes`."""
    use_rocksdb_store(memory_bytes)
    app = faust.App("rocksdb-store-test", store="rocksdb://", datadir=str(tmp_path))
    out = []
    for i in range(tables):
        table = app.Table(f"t{i}", partitions=2)
        store = table.data
        assert isinstance(store, RocksDBStore)
        store._db_for_partition(0)
        store._db_for_partition(1)
        out.append((table, store))
    return out


async def _rebalance(stores: list[tuple[faust.Table, RocksDBStore]], partitions: set[int]) -> None:
    """Every table revokes `partitions`, as Faust's rebalance does, then the loop moves on."""
    for table, store in stores:
        store.revoke_partitions(table, {TP(table.changelog_topic.get_topic_name(), p) for p in partitions})
    moved_on = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(moved_on.set_result, None)  # after what was queued before
    await moved_on


def test_a_rebalance_that_revokes_nothing_runs_no_collection(tmp_path: Path, full_collections: list[int]) -> None:
    stores = _stores(tmp_path)
    gc.collect()
    full_collections.clear()
    asyncio.run(_rebalance(stores, set()))
    assert full_collections == []
    assert all(set(store._dbs) == {0, 1} for _, store in stores)


def test_revoked_databases_are_dropped_with_one_collection_for_all_tables(
        tmp_path: Path, full_collections: list[int]) -> None:
    stores = _stores(tmp_path)
    gc.collect()
    full_collections.clear()
    asyncio.run(_rebalance(stores, {1}))
    assert len(full_collections) == 1, "one collection, not one a table"
    assert all(set(store._dbs) == {0} for _, store in stores)
    for _, store in stores:  # the dropped database is closed: the partition opens again
        store._db_for_partition(1)


def test_every_tables_partitions_share_one_block_cache_and_one_memtable_budget(tmp_path: Path) -> None:
    try:
        stores = _stores(tmp_path, tables=2, memory_bytes=32 * 1024 * 1024)
        dbs = [store._db_for_partition(p) for _, store in stores for p in (0, 1)]
        memory = table_memory()
        assert [db.property_int_value("rocksdb.block-cache-capacity") for db in dbs] == [32 * 1024 * 1024] * 4
        assert memory.write_buffers.get_buffer_size() == 16 * 1024 * 1024
        usage = [memory.write_buffers.get_usage()]
        for db in dbs:  # a write to any table's partition is charged to the one budget
            db[b"key"] = b"v" * 200_000
            usage.append(memory.write_buffers.get_usage())
        assert usage == sorted(set(usage)), usage
        scraped = {sample.labels["part"]: sample.value
                   for family in text_string_to_metric_families(metrics.render().decode())
                   if family.name == "memstream_table_memory_bytes" for sample in family.samples}
        assert scraped["budget"] == 32 * 1024 * 1024
        assert scraped["memtables"] == usage[-1] and scraped["total"] >= usage[-1], scraped
    finally:
        use_rocksdb_store()


def test_memtables_past_their_share_go_to_disk_instead_of_staying_in_memory(tmp_path: Path) -> None:
    """Faust's own options keep every write in memory until a database's memtable reaches 64 MB
    (here: all 96 MB written); with the shared budget the memtables are flushed once they pass
    its half (8 MB)."""
    try:
        stores = _stores(tmp_path, tables=2, memory_bytes=16 * 1024 * 1024)
        dbs = [store._db_for_partition(p) for _, store in stores for p in (0, 1)]
        value = b"v" * 4096
        for n in range(6 * 1024):  # 24 MB a database over 64 keys, as a record rewritten every turn
            for db in dbs:
                db[b"key%d" % (n % 64)] = value
        on_disk = sum(db.property_int_value("rocksdb.total-sst-files-size") for db in dbs)
        in_memory = sum(db.property_int_value("rocksdb.cur-size-all-mem-tables") for db in dbs)
        assert on_disk > 0, "nothing was flushed"
        assert in_memory < 48 * 1024 * 1024, f"{in_memory} bytes of memtables: half of what was written"
    finally:
        use_rocksdb_store()
