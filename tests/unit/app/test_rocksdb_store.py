"""`rocksdb://` tables collect garbage once a rebalance, not once a table (streams/app/rocksdb_store.py)."""
from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path

import faust
import pytest
from faust.types import TP

from streams.app.rocksdb_store import RocksDBStore, use_rocksdb_store


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


def _stores(tmp_path: Path, tables: int = 3) -> list[tuple[faust.Table, RocksDBStore]]:
    """Real RocksDB tables of a Faust app, each with its two partitions' databases open."""
    use_rocksdb_store()
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
