"""The tables a user's memories live in, and how their keys are made.

In the worker these are Faust tables on RocksDB (every write is changelogged and lands on the
partition of the record being processed); in process and in tests they are plain dicts. Faust
tables give keys back as bytes when iterated, dicts as str: `key_text` reads both.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

Table = MutableMapping[Any, Any]


@dataclass(frozen=True)
class MemoryTables:
    """The state the dedup and commands stages share (co-partitioned by user_id)."""

    memories: Table = field(default_factory=dict)
    """memory_id -> Memory document (JSON)."""
    applied: Table = field(default_factory=dict)
    """candidate id or command key -> what it did, so a replay changes nothing."""
    users: Table = field(default_factory=dict)
    """user_id -> {memories, clock, blocked_topics}."""
    thread_revs: Table = field(default_factory=dict)
    """user_id|thread_id -> {rev, turn, memories, changes}: the thread's revision and change log."""
    audit: Table = field(default_factory=dict)
    """memory_id -> audit entries, oldest first."""


def key_text(key: Any) -> str:
    """A table key as text (Faust tables iterate bytes keys, dicts str keys)."""
    return key.decode() if isinstance(key, bytes) else str(key)


def thread_key(user_id: str, thread_id: str) -> str:
    """Key of a thread's revision and change log, and of its turn buffer."""
    return f"{user_id}|{thread_id}"


def command_key(user_id: str, command_id: str) -> str:
    """Key under which the `applied` table remembers a command."""
    return f"command:{user_id}:{command_id}"


def touch_key(user_id: str) -> str:
    """Key under which the `applied` table remembers a user's recent touch commands."""
    return f"touch:{user_id}"


def topic_marker_id(user_id: str, topic: str) -> str:
    """Id under which a blocked topic is announced and audited (it is not a memory)."""
    return f"topic:{user_id}:{topic}"
