"""A batch's table writes are held and made once per key when the batch ends
(`streams.pipeline.write_cache`): reads see them, each is made in the scope of the record that
wrote it last, a user's key is made when the value is written, and a shred makes the held
writes first."""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Iterator

import pytest

from streams.app.inprocess import InProcessPipeline
from streams.pipeline.records import Record
from streams.pipeline.tables import stage_tables
from streams.pipeline.write_cache import ScopeCapture
from streams.privacy.crypto import new_key
from streams.privacy.placement import MisroutedRecord
from streams.privacy.sealed import TABLE_OWNERS
from streams.settings import Settings
from topics import names
from tests.unit.app.test_inprocess import turn

SCOPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("scope", default=None)


class Recorded(dict[Any, Any]):
    """A raw table that remembers each write and the scope it was made in, and adds its name to
    `made` (shared by the tables of one test) at each write."""

    def __init__(self, name: str = "", made: list[str] | None = None) -> None:
        super().__init__()
        self.name = name
        self.made = [] if made is None else made
        self.writes: list[tuple[Any, str | None]] = []

    def __setitem__(self, key: Any, value: Any) -> None:
        self.writes.append((key, SCOPE.get()))
        self.made.append(self.name)
        super().__setitem__(key, value)


@contextmanager
def entered(scope: str | None) -> Iterator[None]:
    token = SCOPE.set(scope)
    try:
        yield
    finally:
        SCOPE.reset(token)


def tables() -> tuple[Any, dict[str, Recorded]]:
    made: list[str] = []
    raw = {name: Recorded(name, made) for name in TABLE_OWNERS}
    return stage_tables(raw, {}, new_key(), ScopeCapture(current=SCOPE.get, enter=entered)), raw


def test_writes_are_held_read_back_and_made_once_per_key_in_their_last_scope() -> None:
    sealed, raw = tables()
    users = sealed.memory.users
    with entered("record 1"):
        users["ana"] = {"clock": 1}
    with entered("record 2"):
        users["ana"] = {"clock": 2}
        users["bo"] = {"clock": 5}
    assert raw["users"] == {}, "nothing is made before the batch ends"
    assert users["ana"] == {"clock": 2} and "bo" in users and len(users) == 2

    assert sealed.writes.flush() == 2
    assert raw["users"].writes == [("ana", "record 2"), ("bo", "record 2")]
    assert users["ana"] == {"clock": 2}, "read back from the sealed table"
    assert sealed.writes.flush() == 0


def test_a_held_value_does_not_change_with_the_object_written_or_read() -> None:
    sealed, _ = tables()
    users = sealed.memory.users
    value = {"blocked_topics": ["work"]}
    users["ana"] = value
    value["blocked_topics"].append("health")
    users["ana"]["blocked_topics"].append("money")
    assert users["ana"] == {"blocked_topics": ["work"]}


def test_a_held_deletion_hides_the_key_and_is_made_at_the_flush() -> None:
    sealed, raw = tables()
    users = sealed.memory.users
    users["ana"] = {"clock": 1}
    sealed.writes.flush()
    del users["ana"]
    assert "ana" not in users and list(users) == [] and users.get("ana") is None
    assert "ana" in raw["users"]
    with pytest.raises(KeyError):
        del users["ana"]
    sealed.writes.flush()
    assert "ana" not in raw["users"]
    assert users.pop("ana", "gone") == "gone"


def test_the_outbox_records_are_made_before_the_writes_they_list() -> None:
    """A stage's outbox (dedup's `applied`, ingest's `turn_log`) lists the writes a replay
    makes again: made after them, a kill in between would leave writes no replay knows of."""
    sealed, raw = tables()
    sealed.memory.memories["m1"] = {"id": "m1", "user_id": "ana"}
    sealed.memory.applied['["ana","candidate","c1"]'] = {"outcome": "created"}
    sealed.ingest.buffers['["ana","t"]'] = {"turns": []}
    sealed.ingest.turn_log['["ana","t","1"]'] = {"buffer_write": []}
    sealed.writes.flush()
    made = raw["applied"].made  # the tables' shared log of writes
    assert made.index("applied") < made.index("memories")
    assert made.index("turn_log") < made.index("buffers")


def test_the_users_key_is_made_when_the_value_is_written() -> None:
    sealed, raw = tables()
    sealed.memory.users["ana"] = {"clock": 1}
    assert sealed.keys.data_key("ana") is not None, "made with the write, inside its record"


def test_a_misrouted_write_is_refused_while_its_record_is_processed(monkeypatch) -> None:
    sealed, raw = tables()

    def misrouted(user_id: str) -> None:
        raise MisroutedRecord(1, 0)

    monkeypatch.setattr("streams.privacy.user_keys.check_routed", misrouted)
    with pytest.raises(MisroutedRecord):
        sealed.memory.users["ana"] = {"clock": 1}
    assert sealed.writes.pending() == 0


def test_a_shred_makes_the_held_writes_first_with_the_old_key() -> None:
    sealed, raw = tables()
    sealed.memory.users["ana"] = {"clock": 1}
    sealed.keys.shred("ana", datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert sealed.writes.pending() == 0
    assert "ana" in raw["users"], "made before the shred"
    assert sealed.memory.users.get("ana") is None, "and unreadable after it"
    assert sealed.keys.data_key("ana") is None, "no new key was made for the purged user"


async def test_a_batch_of_one_threads_turns_writes_its_buffer_once(tmp_path, minilm_embedder) -> None:
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    buffers = Recorded()
    pipeline.sealed.ingest.buffers.table.table = buffers  # the raw table under the sealed one
    texts = ["I adopted a dog named Luna last year.", "She loves the beach near our house.",
             "I work as a nurse at the city hospital."]
    records = [Record(names.CHAT_TURNS, 0, n, b"ana", turn(str(n), text).model_dump_json().encode())
               for n, text in enumerate(texts, start=1)]

    await pipeline.ingest_stage.handle_batch(records)

    written = [key for key, _ in buffers.writes]
    assert written and len(written) == len(set(written)), "each key once for the batch"
    assert pipeline.sealed.writes.pending() == 0, "the stage flushed as the batch ended"


def test_a_table_holding_too_many_keys_makes_them(monkeypatch) -> None:
    monkeypatch.setattr("streams.pipeline.write_cache.MAX_HELD", 3)
    sealed, raw = tables()
    for n in range(3):
        sealed.memory.users[f"u{n}"] = {"n": n}
    sealed.memory.users["u0"] = {"n": 10}
    assert raw["users"] == {}, "a key held again is no new key"
    sealed.memory.users["u3"] = {"n": 3}
    assert len(raw["users"]) == 3 and sealed.writes.pending() == 1
    assert [sealed.memory.users[f"u{n}"]["n"] for n in range(4)] == [10, 1, 2, 3]
