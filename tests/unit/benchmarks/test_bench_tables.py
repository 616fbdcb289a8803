"""`bench tables`: Faust's RocksDB options keep what is written in memtables; memstream's shared
budget flushes it (benchmarks/bench_tables.py)."""
from __future__ import annotations

from benchmarks.bench_tables import run_tables_bench


def test_the_shared_budget_keeps_less_in_memory_than_faust_for_the_same_writes() -> None:
    """24 MB to each of 4 databases: under Faust's 64 MB memtables nothing is flushed. With a
    16 MB budget (memtables flushed past 8) each database's memtable is switched for a flush a
    dozen times, and RocksDB stops a writer once a database holds three unflushed memtables, so
    flushes have finished and the bound holds however slow the flush thread is."""
    report = run_tables_bench(databases=4, megabytes=24, keys=64, memory_mb=16)
    faust, memstream = report["faust"], report["memstream"]
    assert faust["memtables_mb"] >= 90 and faust["sst_files_mb"] == 0, "Faust's keep all 96 MB"
    assert memstream["memtables_mb"] < faust["memtables_mb"] / 2
    assert memstream["sst_files_mb"] > 0
