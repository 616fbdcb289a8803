"""The partition's event-time watermark and its calendar of due runs."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from streams.lifecycle import watermark
from streams.lifecycle.watermark import PartitionClock, hour_slot

T0 = datetime(2024, 1, 1, 10, 30, tzinfo=timezone.utc)


H0 = T0.replace(minute=0)
"""T0's hour: the lifecycle's `now` while the watermark is T0."""


def test_the_watermark_only_moves_forward_is_per_partition_and_runs_at_its_hour():
    table: dict = {}
    clock = PartitionClock(table)
    assert clock.watermark(0) is None
    assert clock.advance(0, T0, offset=0) == H0
    assert clock.advance(0, T0 - timedelta(days=3), offset=1) == H0, "an old turn never moves it back"
    assert clock.advance(0, T0 + timedelta(hours=1), offset=2) == H0 + timedelta(hours=1)
    assert clock.watermark(1) is None
    assert PartitionClock(table).watermark(0) == H0 + timedelta(hours=1), \
        "kept in the table: a restart resumes it"


def test_the_table_is_written_when_the_watermark_enters_a_new_hour_only():
    writes: list[str] = []

    class Table(dict):
        def __setitem__(self, key, value):  # type: ignore[no-untyped-def]
            writes.append(key)
            super().__setitem__(key, value)

    table = Table()
    clock = PartitionClock(table)
    for offset, minutes in enumerate(range(0, 120, 5)):
        clock.advance(0, T0 + timedelta(minutes=minutes), offset)
    assert len(writes) == 3, "10:30, 11:00 and 12:00: each enters a new hour"
    assert clock.watermark(0) == H0 + timedelta(hours=2)


def test_a_redelivered_record_runs_at_the_hour_it_had_the_first_time():
    """Records 0-9 move the watermark an hour each; a worker killed after processing them all
    but committing only 4 gets 5-9 again: each must see its own hour, not the latest one."""
    table: dict = {}
    first = [PartitionClock(table).advance(0, T0 + timedelta(hours=n), offset=n) for n in range(10)]
    restarted = PartitionClock(table)
    again = [restarted.advance(0, T0 + timedelta(hours=n), offset=n) for n in range(5, 10)]
    assert again == first[5:]
    assert restarted.watermark(0, offset=7) == H0 + timedelta(hours=7)
    assert restarted.advance(0, T0, offset=10) == H0 + timedelta(hours=9), "then on as before"


def test_a_slot_rounds_up_so_a_slot_at_or_before_the_watermark_holds_only_due_runs():
    assert hour_slot(T0) == "2024-01-01T11"
    assert hour_slot(T0.replace(minute=0)) == "2024-01-01T10"


def test_due_users_come_out_earliest_first_a_bounded_number_at_a_time(monkeypatch):
    monkeypatch.setattr(watermark, "CHUNK", 2)
    table: dict = {}
    clock = PartitionClock(table)
    for i in range(5):
        clock.schedule(0, f"u{i}", T0 + timedelta(days=1))
    clock.schedule(0, "early", T0)
    clock.schedule(0, "late", T0 + timedelta(days=9))
    clock.schedule(1, "other-partition", T0)
    assert clock.take_due(0, T0 - timedelta(hours=2), 10) == [], "nothing due yet"
    first = clock.take_due(0, T0 + timedelta(days=2), 3)
    assert first[0] == "early" and len(first) == 3
    rest = clock.take_due(0, T0 + timedelta(days=2), 10)
    assert sorted(first[1:] + rest) == [f"u{i}" for i in range(5)]
    assert clock.take_due(0, T0 + timedelta(days=2), 10) == []
    assert clock.take_due(0, T0 + timedelta(days=10), 10) == ["late"]
    assert [k for k in table if '"due"' in k] == ['["due","1","2024-01-01T11","0"]'], \
        "emptied chunks leave the table"


def test_the_outbox_keeps_the_last_records_entries_only(monkeypatch):
    from streams.lifecycle.watermark import Outbox

    monkeypatch.setattr(watermark, "OUTBOX_RECORDS", 2)
    table: dict = {}
    outbox = Outbox(table)
    for offset in (10, 11, 12):
        outbox.keep(0, offset, {"now": f"hour-{offset}", "runs": [], "clock": []})
    assert outbox.kept(0, 10) is None, "too old: dropped"
    assert outbox.kept(0, 12) == {"now": "hour-12", "runs": [], "clock": []}
    assert outbox.kept(0, 13) is None and outbox.kept(1, 12) is None
    assert len(table) == 3, "two records and their index"


def test_marks_written_before_as_iso_times_still_give_their_hour():
    old = {'["partition","0"]': {"marks": [[4, T0.isoformat()], [9, (T0 + timedelta(hours=2)).isoformat()]],
                                 "slots": {}}}
    clock = PartitionClock(old)
    assert clock.watermark(0, offset=5) == H0 and clock.watermark(0) == H0 + timedelta(hours=2)
    assert clock.advance(0, T0 + timedelta(hours=2, minutes=10), offset=10) == H0 + timedelta(hours=2)
    assert clock.advance(0, T0 + timedelta(hours=3), offset=11) == H0 + timedelta(hours=3)
    assert clock.watermark(0, offset=5) == H0, "old and new marks side by side"
    assert old['["partition","0"]']["marks"][-1] == [11, int((H0 + timedelta(hours=3)).timestamp()) // 3600]
