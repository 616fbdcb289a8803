"""A sealed table reads a Faust table's store once per value: Faust's own `[]` asks it twice
(`key in data`, then `data[key]`), two RocksDB reads (`streams.tables.stored_value`)."""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

import faust

from streams.privacy.crypto import new_key
from streams.privacy.sealed import Sealer, SealedTable
from streams.privacy.user_keys import UserKeys


class CountingStore(MutableMapping[Any, Any]):
    """A Faust table's store that counts the lookups made of it."""

    def __init__(self, store: MutableMapping[Any, Any]) -> None:
        self.store, self.lookups = store, 0

    def __contains__(self, key: object) -> bool:
        self.lookups += 1
        return key in self.store

    def __getitem__(self, key: Any) -> Any:
        self.lookups += 1
        return self.store[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.store[key] = value

    def __delitem__(self, key: Any) -> None:
        del self.store[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.store)

    def __len__(self) -> int:
        return len(self.store)


def test_a_value_is_read_from_a_faust_table_s_store_once(tmp_path) -> None:
    app = faust.App("reads", broker="kafka://localhost:9092", store="memory://", datadir=str(tmp_path))
    table = app.Table("memories", default=None)
    sealed = SealedTable(table, Sealer(UserKeys({}, new_key())), lambda key, value: "ana")
    store = CountingStore(table.data)
    table._data = store
    packed, _ = sealed.sealer.seal_stored("ana", b'{"summary": "Ana has a dog."}')
    store["ana:m1"] = packed
    gets: list[Any] = []
    table.on_key_get = gets.append  # type: ignore[method-assign]  # the table's read hook, recorded

    assert sealed["ana:m1"] == {"summary": "Ana has a dog."}
    assert store.lookups == 1, "one store read per value"
    assert sealed.stamp("ana:m1") is not None and store.lookups == 2
    assert sealed.get("ana:m2") is None and store.lookups == 3, "a missing key: one read too"
    assert gets == ["ana:m1", "ana:m1", "ana:m2"], "the table's read hook still runs"
