"""How `streams/privacy/value_dictionary.py` was made (kept to document it; the dictionary
itself is part of the stored format and is never regenerated in place).

A made-up user chats for three sessions a month apart through the in-process pipeline; every
sealed table value it writes is kept. One value of each kind (a user's record, a thread's
revisions, a closed episode, a turn buffer, a turn's record, a turn's `applied` record, and two
memory records last: zlib reaches the end of its window most cheaply, and memory records are
most of the bytes) is taken at the median size, its vectors, ids and digests blanked, cut to
at most 1.5-2 KB, and the pieces joined.

    python -m benchmarks.make_value_dictionary > dictionary.bin
"""
from __future__ import annotations

import asyncio
import collections
import re
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from streams.app.inprocess import InProcessPipeline
from streams.app.services import shared_embedder
from streams.privacy import sealed
from streams.settings import Settings
from topics.turns import Turn

TEXTS = [
    "Hi! How have you been lately?",
    "I adopted a dog named Luna last year and she loves the beach.",
    "I work as a nurse at the city hospital, mostly night shifts.",
    "My sister is visiting next week, we plan to go hiking.",
    "I started learning the guitar in March and practice every evening.",
    "We moved to a new apartment near the park last month.",
    "I'm allergic to peanuts, so I always check the labels.",
    "Yesterday I finished reading a novel about a lighthouse keeper.",
    "I love cooking Italian food for my friends on weekends.",
    "My favourite band is playing a concert in the summer.",
    "I'm training for a half marathon in October.",
    "Thanks, talk to you soon!",
]
PIECES = [(b'{"memories"', 1, 1500), (b'{"rev"', 1, 1500), (b'{"episode":{', 1, 1500),
          (b'{"turns"', 1, 1500), (b'{"episode":n', 1, 1500), (b'{"$turn"', 1, 2000),
          (b'{"$record"', 2, 1500)]
"""(how a kind of value starts, how many of it, at most how many bytes each), in order."""
_BLANKED = [(re.compile(rb'"(h:|i8:)[A-Za-z0-9+/=]+"'), b'""'),
            (re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), b""),
            (re.compile(rb'"[0-9a-f]{16}"'), b'""')]


def written_values() -> list[bytes]:
    """The plaintext of every sealed table value the made-up chat writes."""
    values: list[bytes] = []
    put = sealed.SealedTable.put_plaintext

    def kept(table: sealed.SealedTable, key: object, user_id: str, plaintext: bytes) -> None:
        put(table, key, user_id, plaintext)
        values.append(bytes(plaintext))

    sealed.SealedTable.put_plaintext = kept  # type: ignore[method-assign]  # records what the chat writes
    start = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
    turns = [Turn(user_id="user", thread_id=f"session_{day}", turn_id=f"D{day}:{n}", role="user",
                  speaker="User", text=text, ts=start + timedelta(days=30 * day, minutes=n))
             for day in range(3) for n, text in enumerate(TEXTS)]
    with tempfile.TemporaryDirectory() as data_dir:
        pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=Path(data_dir)),
                                     shared_embedder("local-int8", 32))
        asyncio.run(pipeline.ingest(turns))
    sealed.SealedTable.put_plaintext = put  # type: ignore[method-assign]  # as it was
    return values


def dictionary(values: list[bytes]) -> bytes:
    """The pieces of `PIECES`, blanked and joined."""
    by_start: dict[bytes, list[bytes]] = collections.defaultdict(list)
    for value in values:
        for start, _, _ in PIECES:
            if value.startswith(start):
                by_start[start].append(value)
    pieces = []
    for start, count, most in PIECES:
        ranked = sorted(by_start[start], key=len)
        for n in range(count):
            piece = ranked[len(ranked) * (n + 1) // (count + 1)]
            for pattern, blank in _BLANKED:
                piece = pattern.sub(blank, piece)
            pieces.append(piece[:most])
    return b"".join(pieces)


if __name__ == "__main__":
    sys.stdout.buffer.write(dictionary(written_values()))
