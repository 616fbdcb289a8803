"""The tables a user's memories live in, and how their keys are made.

In the worker these are Faust tables on RocksDB (every write is changelogged and lands on the
partition of the record being processed); in process and in tests they are dicts. Either way
the stages see them through `streams.privacy.sealed.SealedTable`: values are stored sealed for
their user. What any table is (`Table`) and how its keys read (`key_text`) is `streams.tables`.

Keys made of several ids are JSON arrays with the user first (`composite_key`): ids are free
text, so joining them with a separator would let user `a` with thread `x|y` and user `a|x` with
thread `y` share a key.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from streams.privacy.user_keys import UserKeys
from streams.tables import Table


@dataclass(frozen=True)
class MemoryTables:
    """The state the dedup and commands stages share (co-partitioned by user_id)."""

    memories: Table = field(default_factory=dict)
    """memory_id -> Memory document (JSON). In the stages a view of the memory records
    (`streams.memory.memory_records`), as `audit` is."""
    applied: Table = field(default_factory=dict)
    """`candidate_key`, [user, "command", id] or [user, "touch"] -> what it did (replays change
    nothing). In the stages a turn's candidates share one value (`streams.memory.applied_by_turn`)."""
    users: Table = field(default_factory=dict)
    """user_id -> {memories, clock, blocked_topics}."""
    thread_revs: Table = field(default_factory=dict)
    """[user, thread] -> {rev, turn, memories, changes}: the thread's revision and change log."""
    audit: Table = field(default_factory=dict)
    """memory_id -> audit entries, oldest first."""
    keys: UserKeys | None = None
    """The users' data keys (a purge deletes the user's)."""
    flush: Callable[[], object] = lambda: None
    """Make the writes held for the batch (`streams.pipeline.write_cache`): each stage calls it
    as its batch ends."""


def composite_key(*parts: str) -> str:
    """A key made of several ids, unambiguous whatever they contain: their JSON array, as
    `json.dumps(parts, ensure_ascii=False, separators=(",", ":"))` writes it (the keys of
    tables written before). orjson writes the same text for strings, a tenth of the time: keys
    are made several times for every record; a string orjson refuses (a lone surrogate) goes
    to `json`."""
    try:
        return orjson.dumps(parts).decode()
    except orjson.JSONEncodeError:
        return json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))


def thread_key(user_id: str, thread_id: str) -> str:
    """Key of a thread's revision and change log, and of its turn buffer."""
    return composite_key(user_id, thread_id)


def user_day_key(user_id: str) -> str:
    """Key of the user's count of episodes of the day (in the turn buffers' table)."""
    return composite_key(user_id)


def turn_key(user_id: str, thread_id: str, turn_id: str) -> str:
    """Key of what ingest decided for one turn."""
    return composite_key(user_id, thread_id, turn_id)


def candidate_key(user_id: str, thread_id: str, turn_id: str, candidate_id: str) -> str:
    """Key under which the `applied` table remembers a candidate: it names the candidate's
    turn, whose one value holds the records of all its candidates
    (`streams.memory.applied_by_turn`)."""
    return composite_key(user_id, "candidate", thread_id, turn_id, candidate_id)


def command_key(user_id: str, command_id: str) -> str:
    """Key under which the `applied` table remembers a command."""
    return composite_key(user_id, "command", command_id)


def touch_key(user_id: str) -> str:
    """Key under which the `applied` table remembers a user's recent touch commands."""
    return composite_key(user_id, "touch")


def topic_marker_id(user_id: str, command_id: str) -> str:
    """The id under which a blocked topic is announced and audited (it is not a memory), made
    from the command that first blocked it: nothing of the topic shows in keys or envelopes."""
    return "topic:" + str(uuid.uuid5(uuid.NAMESPACE_URL, composite_key("topic", user_id, command_id)))
