"""What a table is, to every package: a mutable mapping, a Faust table on RocksDB in the worker
(every write changelogged) and a dict in process and in tests; and how its keys read.

Below `streams.privacy` (which seals tables) and `streams.memory` (which names the tables a
user's memories live in, `streams.memory.tables`).
"""
from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

Table = MutableMapping[Any, Any]


def key_text(key: Any) -> str:
    """A table key as text (Faust tables iterate bytes keys, dicts str keys)."""
    return key.decode() if isinstance(key, bytes) else str(key)


def stored_value(table: Table, key: Any) -> Any | None:
    """`table.get(key)`, asking the store once. A Faust table has `__missing__` (for its
    `default`), so its `[]` asks its store `key in data` and then `data[key]`: two RocksDB
    reads for every value read. This calls the table's read hook (`on_key_get`: its sensors)
    and reads the store once."""
    on_key_get = getattr(table, "on_key_get", None)
    if on_key_get is None:
        return table.get(key)
    on_key_get(key)
    store: Table = getattr(table, "data")
    try:
        return store[key]
    except KeyError:
        return None
