"""The worker's tables read with one RocksDB lookup and encode raw keys directly
(`streams/app/single_lookup_table.py`, `streams/app/rocksdb_store.py`, issue 22)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import faust
import pytest

from streams.app.rocksdb_store import RocksDBStore, use_rocksdb_store
from streams.app.single_lookup_table import SingleLookupTable


class CountedDB:
    """A partition's RocksDB database whose gets are counted."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.gets = 0

    def get(self, key: bytes) -> Any:
        self.gets += 1
        return self.db.get(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def _table(tmp_path: Path, table_class: type[faust.Table], **options: Any) -> tuple[faust.Table, CountedDB]:
    """A real RocksDB table of a Faust app (one partition) holding b"ana" -> b"luna"."""
    use_rocksdb_store()
    app = faust.App("single-lookup-test", store="rocksdb://", datadir=str(tmp_path), Table=table_class)
    table = app.Table("docs", partitions=1, key_type=bytes, value_type=bytes,
                      **options)
    store = table.data
    assert isinstance(store, RocksDBStore)
    counted = CountedDB(store._db_for_partition(0))
    store._dbs[0] = counted
    counted.db.put(b"ana", b"luna")
    store._key_index[b"ana"] = 0
    return table, counted


@pytest.mark.parametrize("key", ["ana", b"ana"])
def test_a_read_is_one_lookup(tmp_path: Path, key: Any) -> None:
    table, db = _table(tmp_path, SingleLookupTable)
    assert table[key] == b"luna"
    assert db.gets == 1, "Faust's table asks whether the key is there, then reads it: two gets"


def test_faust_s_own_table_makes_two_lookups_a_read(tmp_path: Path) -> None:
    """What the worker's table saves (the test above fails with Faust's class)."""
    table, db = _table(tmp_path, faust.Table)
    assert table["ana"] == b"luna"
    assert db.gets == 2


def test_a_missing_key_answers_as_faust_s_table_does(tmp_path: Path) -> None:
    table, _ = _table(tmp_path, SingleLookupTable)
    with pytest.raises(KeyError):
        table["bob"]
    assert table.get("bob") is None
    assert "bob" not in table and "ana" in table
    with_default, _ = _table(tmp_path / "default", SingleLookupTable, default=lambda: b"none")
    assert with_default["bob"] == b"none"


@pytest.mark.parametrize("key", ["ana", "zoë", b"\xffraw", "user:ana:42"])
def test_raw_keys_encode_as_faust_s_registry_does(tmp_path: Path, key: Any) -> None:
    table, _ = _table(tmp_path, SingleLookupTable)
    store = table.data
    faust_bytes = table.app.serializers.dumps_key(bytes, key, serializer="raw")
    assert store._encode_key(key) == faust_bytes


def test_keys_of_other_serializers_keep_faust_s_encoding(tmp_path: Path) -> None:
    use_rocksdb_store()
    app = faust.App("single-lookup-json", store="rocksdb://", datadir=str(tmp_path), Table=SingleLookupTable)
    store = app.Table("json-keys", partitions=1).data  # no key_type: JSON keys
    assert store._encode_key("ana") == b'"ana"'


def test_raw_keys_skip_faust_s_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table, _ = _table(tmp_path, SingleLookupTable)

    def registry(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("a raw key went through the serializer registry")
    monkeypatch.setattr(table.app.serializers, "dumps_key", registry)
    assert table["ana"] == b"luna" and "ana" in table
