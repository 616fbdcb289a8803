"""The event-time clock of a partition, and the calendar of its users' lifecycle runs.

The watermark of a partition is the latest turn time the dedup stage has seen on it (it never
moves back). Users are co-partitioned by user_id, so it is the clock every user of the
partition ages by, the idle ones included: a user who said nothing for 61 days is 61 days older
once other users of the partition have spoken for that long.

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
    return datetime.strptime(slot, "%Y-%m-%dT%H").replace(tzinfo=timezone.utc)


class PartitionClock:
    """Watermarks and calendars of the partitions, in one `table`.

    The exact watermark is kept in RAM and written to the table only when it enters a new hour:
    a write per record would add a changelog message to every record. After a restart the
    partition resumes from the hour written (the next turn moves it on); runs are due by the
    hour, so none is lost or repeated.
    """

    def __init__(self, table: Table) -> None:
        self.table = table
        self._exact: dict[int, datetime] = {}

    @staticmethod
    def _key(partition: int) -> str:
        return composite_key("partition", str(partition))

    @staticmethod
    def _chunk_key(partition: int, slot: str, chunk: int) -> str:
        return composite_key("due", str(partition), slot, str(chunk))

    def _record(self, partition: int) -> dict[str, Any]:
        return dict(self.table.get(self._key(partition)) or {"watermark": None, "slots": {}})

    def _stored(self, partition: int) -> datetime | None:
        value = self._record(partition)["watermark"]
        return datetime.fromisoformat(value) if value else None

    def watermark(self, partition: int) -> datetime | None:
        exact, stored = self._exact.get(partition), self._stored(partition)
        return max(exact, stored) if exact is not None and stored is not None else exact or stored

    def advance(self, partition: int, ts: datetime) -> datetime:
        """Move the partition's watermark to `ts` if later; return the watermark."""
        exact = self._exact.get(partition)
        if exact is not None and exact >= ts:
            return exact
        record = self._record(partition)
        stored = datetime.fromisoformat(record["watermark"]) if record["watermark"] else None
        current = max(ts, stored) if stored is not None else ts
        self._exact[partition] = current
        if stored is None or hour_slot(current) != hour_slot(stored):
            record["watermark"] = current.isoformat()
            self.table[self._key(partition)] = record
        return current

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
"""Records of a partition whose lifecycle events are kept for a redelivery (far more than a
worker processes between two offset commits)."""


class Outbox:
    """The memory events (sealed, as sent) the lifecycle made while processing each of the last
    `OUTBOX_RECORDS` records of a partition that made any, by offset.

    Processing is at-least-once: a worker killed before committing processes its last records
    again, and the lifecycle, which finds its transitions made, would make nothing; the events
    it had made then may never have reached the topic. A redelivered record re-sends them
    instead (same event ids).
    """

    def __init__(self, table: Table) -> None:
        self.table = table

    @staticmethod
    def _index_key(partition: int) -> str:
        return composite_key("outbox", str(partition))

    @staticmethod
    def _key(partition: int, offset: int) -> str:
        return composite_key("outbox", str(partition), str(offset))

    def sent(self, partition: int, offset: int) -> list[list[str]] | None:
        """The [user_id, event JSON] sent while processing this record before, or None."""
        if offset not in (self.table.get(self._index_key(partition)) or []):
            return None
        return list(self.table.get(self._key(partition, offset)) or [])

    def keep(self, partition: int, offset: int, sent: list[list[str]]) -> None:
        offsets = [o for o in self.table.get(self._index_key(partition)) or [] if o != offset]
        offsets.append(offset)
        for old in offsets[:-OUTBOX_RECORDS]:
            self.table.pop(self._key(partition, old), None)
        self.table[self._key(partition, offset)] = sent
        self.table[self._index_key(partition)] = offsets[-OUTBOX_RECORDS:]
