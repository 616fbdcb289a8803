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
