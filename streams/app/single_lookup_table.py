"""Faust's table, each read one lookup in its store.

A Faust table's `table[key]` is `FastUserDict.__getitem__`, which, because `Table` defines
`__missing__` (for tables with a default), first asks the store whether it holds the key and
then reads it: two RocksDB gets, and two key encodings, for every read. The worker reads its
tables about 25 times a turn (documents, `applied` records, a user's clock and keys). A
`SingleLookupTable` reads once and falls back to `__missing__` when the store has nothing, which
answers as Faust's does: the value, or the table's default, or KeyError.
"""
from __future__ import annotations

from typing import Any

import faust


class SingleLookupTable(faust.Table):  # type: ignore[misc]  # faust.Table is generic in Faust's stubs only
    """`faust.Table` whose reads make one store lookup (module doc); the app's `Table=`."""

    def __getitem__(self, key: Any) -> Any:
        self.on_key_get(key)  # what Faust's ManagedUserDict does first (its sensors)
        try:
            return self.data[key]
        except KeyError:
            return self.__missing__(key)
