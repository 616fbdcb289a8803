"""The event-time clock of a partition, and the calendar of its users' lifecycle runs.

The watermark of a partition is the latest turn time the dedup stage has seen on it (it never
moves back); the lifecycle runs at its hour. Users are co-partitioned by user_id, so it is the
clock every user of the partition ages by, the idle ones included: a user who said nothing for
61 days is 61 days older once other users of the partition have spoken for that long.

The calendar lists, per partition and per event-time hour, the users whose next run falls in
it, in chunks of `CHUNK` ids. A run puts the user in the hour of its next run; when the
watermark passes that hour, the runner takes the user back (a few per record). A user who ran
meanwhile, on their own activity, was put in a later hour by that run: the runner checks and
drops the stale entry. Everything is kept in one table (`lifecycle`, written inside the current
record's processing, so on that record's partition, and recovered with it after a restart).
Keys carry user ids only, never content.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from streams.memory.tables import Table, composite_key

CHUNK = 200
"""User ids per calendar value (bounds what one write rewrites)."""


def hour_slot(ts: datetime) -> str:
    """The calendar hour a run due at `ts` waits in: `ts` rounded up to the hour, UTC, so a
    slot at or before the watermark holds only runs that are due."""
    utc = ts.astimezone(timezone.utc)
    floor = utc.replace(minute=0, second=0, microsecond=0)
    return (floor if floor == utc else floor + timedelta(hours=1)).strftime("%Y-%m-%dT%H")


def slot_start(slot: str) -> datetime:
    return datetime.fromisoformat(slot).replace(tzinfo=timezone.utc)  # strptime: 30x the time


def hour_floor(ts: datetime) -> datetime:
    """`ts` rounded down to the hour, UTC: the lifecycle's `now` (see `PartitionClock`)."""
    return ts.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)


MARKS = 256
"""Hour marks a partition keeps (far more than a worker processes between two offset commits)."""


class PartitionClock:
    """Watermarks and calendars of the partitions, in one `table`.

    A partition's record keeps the marks where its watermark entered a new hour: [offset of the
    record that moved it, the hour it entered, in hours since the epoch]. Writing the exact
    watermark for every record would add a changelog message to each; a mark is written once an
    hour of event time. The lifecycle's `now` is the watermark's hour (`hour_floor`), which the
    marks give exactly for any record: a record redelivered after a crash (its offset at or
    before the last mark) gets the hour it had the first time, not the hour later records moved
    the watermark to since. So a killed run and an uninterrupted one run the same passes at the
    same `now`.
    """

    def __init__(self, table: Table) -> None:
        self.table = table

    @staticmethod
    def _key(partition: int) -> str:
        return composite_key("partition", str(partition))

    @staticmethod
    def _chunk_key(partition: int, slot: str, chunk: int) -> str:
        return composite_key("due", str(partition), slot, str(chunk))

    def _record(self, partition: int) -> dict[str, Any]:
        return dict(self.table.get(self._key(partition)) or {"marks": [], "slots": {}})

    def watermark(self, partition: int, offset: int | None = None) -> datetime | None:
        """The partition's `now` as of the record at `offset` (the latest when None): the hour
        of the latest mark at or before it (the earliest mark kept when all are later)."""
        marks = self._record(partition).get("marks") or []
        return _hour_at(marks, offset) if marks else None

    def advance(self, partition: int, ts: datetime, offset: int) -> datetime:
        """Move the partition's watermark to `ts`, seen in the record at `offset`, if it enters
        a later hour; return the partition's `now` as of that record (class doc)."""
        record = self._record(partition)
        marks = list(record.get("marks") or [])
        if marks and offset <= marks[-1][0]:
            return _hour_at(marks, offset)
        now = hour_floor(ts)
        if marks and now <= _mark_hour(marks[-1]):
            return _mark_hour(marks[-1])
        record["marks"] = [*marks[-(MARKS - 1):], [offset, int(now.timestamp()) // 3600]]
        self.table[self._key(partition)] = record
        return now

    def schedule(self, partition: int, user_id: str, due: datetime) -> None:
        """Put `user_id` in the calendar hour of `due`."""
        record = self._record(partition)
        slot = hour_slot(due)
        chunks = dict(record["slots"])
        count = int(chunks.get(slot, 0))
        last = list(self.table.get(self._chunk_key(partition, slot, count - 1)) or []) if count else []
        if not count or len(last) >= CHUNK:
            count, last = count + 1, []
        self.table[self._chunk_key(partition, slot, count - 1)] = [*last, user_id]
        if chunks.get(slot) != count:
            chunks[slot] = count
            record["slots"] = chunks
            self.table[self._key(partition)] = record

    def take_due(self, partition: int, now: datetime, limit: int) -> list[str]:
        """Take up to `limit` users out of the calendar hours at or before `now`, the earliest
        hour first."""
        record = self._record(partition)
        chunks = dict(record["slots"])
        taken: list[str] = []
        for slot in sorted(chunks):
            if len(taken) >= limit or slot_start(slot) > now:
                break
            while chunks.get(slot) and len(taken) < limit:
                key = self._chunk_key(partition, slot, chunks[slot] - 1)
                users = list(self.table.get(key) or [])
                room = limit - len(taken)
                taken += users[:room]
                rest = users[room:]
                if rest:
                    self.table[key] = rest
                else:
                    self.table.pop(key, None)
                    chunks[slot] -= 1
            if not chunks.get(slot):
                chunks.pop(slot, None)
        if chunks != record["slots"]:
            record["slots"] = chunks
            self.table[self._key(partition)] = record
        return taken


OUTBOX_RECORDS = 256
"""Records of a partition whose lifecycle runs are kept for a redelivery (far more than a
worker processes between two offset commits)."""


class Outbox:
    """What the lifecycle did while processing each of the last `OUTBOX_RECORDS` records of a
    partition that ran any pass, by offset: the `now` it ran at, each user's run (the events it
    sent and the table writes it made, sealed for the user) and its own writes to this table
    (`PartitionClock`'s calendar and marks, ids only).

    Processing is at-least-once: a worker killed before committing processes its last records
    again. The lifecycle, which would find its transitions made (or half made: the tables'
    changelogs are separate topics, a kill can land some writes and lose others), must not run
    again: a redelivered record makes again the writes that did not land (`applied.redo`) and
    re-sends the same events (same event ids). The entry is written before any of the writes,
    on the same partition of the same table as the calendar's.
    """

    def __init__(self, table: Table) -> None:
        self.table = table

    @staticmethod
    def _index_key(partition: int) -> str:
        return composite_key("outbox", str(partition))

    @staticmethod
    def _key(partition: int, offset: int) -> str:
        return composite_key("outbox", str(partition), str(offset))

    def kept(self, partition: int, offset: int) -> dict[str, Any] | None:
        """What processing the record at `offset` did before (`keep`), or None."""
        if offset not in (self.table.get(self._index_key(partition)) or []):
            return None
        return dict(self.table.get(self._key(partition, offset)) or {})

    def keep(self, partition: int, offset: int, entry: dict[str, Any]) -> None:
        """Keep `entry` ({"now", "runs", "clock"}) for the record at `offset`."""
        offsets = [o for o in self.table.get(self._index_key(partition)) or [] if o != offset]
        offsets.append(offset)
        for old in offsets[:-OUTBOX_RECORDS]:
            self.table.pop(self._key(partition, old), None)
        self.table[self._key(partition, offset)] = entry
        self.table[self._index_key(partition)] = offsets[-OUTBOX_RECORDS:]


def _hour_at(marks: list[Any], offset: int | None) -> datetime:
    """The hour of the latest of `marks` (oldest first, at least one) at or before `offset`
    (the latest when None; the earliest when all are later)."""
    at = marks[-1]
    if offset is not None and offset < at[0]:
        at = next((m for m in reversed(marks) if m[0] <= offset), marks[0])
    return _mark_hour(at)


def _mark_hour(mark: list[Any]) -> datetime:
    """A mark's hour: [offset, hours since the epoch]; marks written before held [offset, the
    record's ISO time], three times the bytes in a record rewritten at every new hour."""
    if isinstance(mark[1], str):
        return hour_floor(datetime.fromisoformat(mark[1]))
    return datetime.fromtimestamp(int(mark[1]) * 3600, timezone.utc)
