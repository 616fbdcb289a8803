"""What a table is, to every package: a mutable mapping, a Faust table on RocksDB in the worker
(every write changelogged) and a dict in process and in tests; and how its keys read.

Below `streams.privacy` (which seals tables) and `streams.memory` (which names the tables a
user's memories live in, `streams.memory.tables`).
"""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

Table = MutableMapping[Any, Any]


def key_text(key: Any) -> str:
    """A table key as text (Faust tables iterate bytes keys, dicts str keys)."""
    return key.decode() if isinstance(key, bytes) else str(key)


class ReadableItems(MutableMapping[Any, Any]):
    """A mapping whose `items` and `values` leave out the keys that do not read (a shredded
    user's values, which the sealed tables keep `in` but cannot open): an iterator, not a view."""

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]  # an iterator that skips unreadable keys
        for key in list(self):
            try:
                yield key, self[key]
            except KeyError:
                continue

    def values(self) -> Iterator[Any]:  # type: ignore[override]  # an iterator, as items
        return (value for _, value in self.items())
