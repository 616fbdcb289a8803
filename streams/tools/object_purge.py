"""What the embedded broker's object store deletes: batches every consumer group has read.

Tansu keeps each produced batch of a partition as one object (`…/partitions/P/records/
<base offset>.batch`) and lists the partition's every batch object on each fetch, ending the
listing at the fetch's deadline (the consumer's fetch max wait): a partition of a few thousand
batch objects is no longer read at its tail. Nothing in Tansu 0.6 deletes a batch (no retention,
and DeleteRecords is not implemented), so without this a topic the worker reads, `chat.turns`
first, grows until the worker stops reading it.

The rule, as Kafka Streams purges its repartition topics once they are committed: a batch object
of a partition is deleted once every consumer group that has committed an offset on that
partition has committed past the batch's last record, keeping the partition's newest
`KEEP_BATCHES` objects for a reader that comes later. A partition no group has committed on is
never touched: changelogs (read by a worker's recovery, which commits nothing), dead-letter
topics, and topics only downstream readers read keep every batch.
"""
from __future__ import annotations

import json
import logging
import re
import sqlite3

log = logging.getLogger(__name__)

KEEP_BATCHES = 1000
"""Batch objects a purged partition always keeps, newest first."""

PURGE_INTERVAL_SECONDS = 30.0

_OFFSET_KEY = re.compile(
    r"clusters/(?P<cluster>[^/]+)/groups/consumers/(?P<group>[^/]+)/offsets/(?P<topic>[^/]+)"
    r"/partitions/(?P<partition>\d{10})\.json")


def committed_floor(db: sqlite3.Connection, bucket: str) -> dict[str, int]:
    """The lowest offset any group has committed, per partition records prefix
    (`clusters/C/topics/T/partitions/P/records/`), for partitions some group has committed on."""
    floors: dict[str, int] = {}
    rows = db.execute("SELECT key, body FROM objects WHERE bucket = ? AND key GLOB ?",
                      (bucket, "clusters/*/groups/consumers/*/offsets/*/partitions/*.json"))
    for key, body in rows:
        found = _OFFSET_KEY.fullmatch(key)
        if found is None or found["topic"].endswith("-changelog"):
            continue
        try:
            offset = int(json.loads(body)["offset"])
        except (ValueError, KeyError, TypeError):
            continue  # not an offset Tansu wrote: leave the partition alone
        prefix = (f"clusters/{found['cluster']}/topics/{found['topic']}/partitions/"
                  f"{found['partition']}/records/")
        floors[prefix] = min(offset, floors.get(prefix, offset))
    return floors


def purgeable(base_offsets: list[int], floor: int, keep: int = KEEP_BATCHES) -> list[int]:
    """Of a partition's batch objects (their base offsets, ascending), those wholly below `floor`
    (the next batch starts at or before it) and not among the newest `keep`."""
    last_candidate = len(base_offsets) - keep
    return [base for i, base in enumerate(base_offsets[:-1])
            if i < last_candidate and base_offsets[i + 1] <= floor]


def purge_read_batches(db: sqlite3.Connection, bucket: str, keep: int = KEEP_BATCHES) -> int:
    """Delete every batch object every committing group has read (module doc); the count."""
    deleted = 0
    for prefix, floor in committed_floor(db, bucket).items():
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        keys = [key for (key,) in db.execute(
            "SELECT key FROM objects WHERE bucket = ? AND key >= ? AND key < ? ORDER BY key",
            (bucket, prefix, end))]
        bases = {}
        for key in keys:
            name = key[len(prefix):]
            if name.endswith(".batch") and name[:-6].isdigit():
                bases[int(name[:-6])] = key
        doomed = purgeable(sorted(bases), floor, keep)
        if doomed:
            with db:
                db.executemany("DELETE FROM objects WHERE bucket = ? AND key = ?",
                               [(bucket, bases[base]) for base in doomed])
            deleted += len(doomed)
    if deleted:
        log.info("deleted %d batch objects every consumer group had read", deleted)
    return deleted


def purge_all_buckets(db: sqlite3.Connection, keep: int = KEEP_BATCHES) -> int:
    """`purge_read_batches` over every bucket of the store."""
    return sum(purge_read_batches(db, bucket, keep)
               for (bucket,) in db.execute("SELECT name FROM buckets").fetchall())
