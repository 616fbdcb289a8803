"""`memstream bench tables`: what RocksDB keeps in memory when a worker's tables are written
steadily, with Faust's own options and with memstream's shared budget (`TABLE_MEMORY_MB`).

A worker opens a database for every table and partition it holds (11 tables × its partitions).
Each database here is written `megabytes` of 1 KB values over `keys` keys, as a record rewritten
every turn (a user's clock, a thread's revision); a memtable keeps every write until it is
flushed. Each side runs in a fresh process so its RSS is its own.
"""
from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

SIDES = ("faust", "memstream")
"""Faust's `RocksDBOptions` as they are, and `streams.app.rocksdb_store.BoundedRocksDBOptions`."""
VALUE_BYTES = 1024


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_side(side: str, databases: int, megabytes: int, keys: int, memory_mb: int) -> dict[str, Any]:
    """Open `databases` databases with one side's options, write them, and measure (in the
    calling process: `run_tables_bench` gives each side a fresh one)."""
    from faust.stores.rocksdb import RocksDBOptions

    from streams.app import rocksdb_store

    rocksdb_store.use_rocksdb_store(memory_mb * 1024 * 1024)
    options = (rocksdb_store.BoundedRocksDBOptions if side == "memstream" else RocksDBOptions)(use_rocksdict=True)
    value = os.urandom(VALUE_BYTES)
    with tempfile.TemporaryDirectory(prefix="bench-tables-") as directory:
        before = _rss_bytes()
        dbs = [options.open(os.path.join(directory, f"db{i}")) for i in range(databases)]
        started = time.perf_counter()
        for n in range(megabytes * 1024 * 1024 // VALUE_BYTES):
            key = b"key%d" % (n % keys)
            for db in dbs:
                db[key] = value
        seconds = time.perf_counter() - started
        memtables = sum(db.property_int_value("rocksdb.cur-size-all-mem-tables") for db in dbs)
        on_disk = sum(db.property_int_value("rocksdb.total-sst-files-size") for db in dbs)
        grown = _rss_bytes() - before
        for db in dbs:
            db.close()
    return {"memtables_mb": round(memtables / 1e6, 1), "sst_files_mb": round(on_disk / 1e6, 1),
            "rss_grown_mb": round(grown / 1e6, 1), "write_seconds": round(seconds, 2)}


def run_tables_bench(databases: int = 44, megabytes: int = 16, keys: int = 500,
                     memory_mb: int = 256) -> dict[str, Any]:
    """Both sides, one after the other, each in a fresh process."""
    written = databases * megabytes
    report: dict[str, Any] = {"databases": databases, "megabytes_per_database": megabytes,
                              "keys_per_database": keys, "written_mb": written,
                              "table_memory_mb": memory_mb}
    for side in SIDES:
        with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
            report[side] = pool.submit(run_side, side, databases, megabytes, keys, memory_mb).result()
    return report


def render(report: dict[str, Any], console: Console) -> None:
    table = RichTable(title=f"RocksDB in memory: {report['databases']} databases, "
                            f"{report['megabytes_per_database']} MB written to each over "
                            f"{report['keys_per_database']} keys ({report['written_mb']} MB)")
    table.add_column("options")
    for column in ("memtables MB", "SST files MB", "RSS grown MB", "write s"):
        table.add_column(column, justify="right")
    labels = {"faust": "Faust's own", "memstream": f"memstream (TABLE_MEMORY_MB={report['table_memory_mb']})"}
    for side in SIDES:
        row = report[side]
        table.add_row(labels[side], str(row["memtables_mb"]), str(row["sst_files_mb"]),
                      str(row["rss_grown_mb"]), str(row["write_seconds"]))
    console.print(table)
