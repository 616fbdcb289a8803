"""The write budget: new memories per user per event-time hour; past it, stored down-ranked, and
a correction never limited."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from streams.memory.candidates import apply_candidate
from streams.memory.state import MemoryState
from streams.memory.vector_index import VectorIndex
from streams.pipeline.tables import stage_tables
from streams.privacy.crypto import new_key
from streams.privacy.sealed import TABLE_OWNERS
from tests.unit.memory.test_memory_state import SEED_BANDS
from topics.candidates import Candidate, Fact
from topics.turns import Turn
from tests import defaults

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


def budgeted(limit: int) -> MemoryState:
    tables = stage_tables({name: {} for name in TABLE_OWNERS}, {}, new_key()).memory
    return MemoryState(tables, VectorIndex(8), defaults.dedup(SEED_BANDS, write_rate_limit_per_hour=limit))


def apply(s: MemoryState, n: int, summary: str, minutes: float, key: str | None = None,  # type: ignore[no-untyped-def]
          kind: str = "semantic"):
    turn = Turn(user_id="u", thread_id="t", turn_id=str(n), role="user", speaker="Ana", text="x",
                ts=T0 + timedelta(minutes=minutes))  # type: ignore[arg-type]
    fact = Fact(type=kind, summary=summary, importance=4, entity_key=key)  # type: ignore[arg-type]
    vector = np.zeros(8, dtype=np.float32)
    vector[n % 8] = 1.0
    applied = apply_candidate(s, Candidate(turn=turn, fact=fact, fact_index=0, fact_count=1, confidence=0.9), vector)
    return applied, s.memory(applied.memory_id)


def test_past_the_hourly_budget_a_new_fact_is_kept_but_down_ranked_and_the_budget_refills():
    s = budgeted(2)
    assert apply(s, 1, "Ana likes tea.", 0)[1].importance == 4
    assert apply(s, 2, "Ana likes jazz.", 10)[1].importance == 4
    applied, over = apply(s, 3, "Ana likes chess.", 20)
    assert applied.outcome == "created", "never dropped"
    assert over.importance == 3 and "over_write_budget" in over.tags, "one level lower"
    assert applied.events[0].meta["write_budget"] == "over"
    assert apply(s, 4, "Ana likes rowing.", 61)[1].importance == 4, "an event-time hour later"


def test_a_correction_past_the_budget_is_applied_in_full():
    s = budgeted(1)
    apply(s, 1, "Luna is 3 years old.", 0, key="profile:pet:luna:age")
    applied, newer = apply(s, 2, "Luna is 4 years old.", 5, key="profile:pet:luna:age")
    assert applied.outcome == "superseded"
    assert newer.importance == 4 and "over_write_budget" not in newer.tags


def test_no_limit_when_zero():
    s = budgeted(0)
    assert all(apply(s, i, f"Ana fact {i}.", i)[1].importance == 4 for i in range(5))


def test_episodes_are_not_hot_path_writes():
    s = budgeted(1)
    apply(s, 1, "Ana likes tea.", 0)
    assert apply(s, 2, "On 2024-05-01 (W18, 2024) we discussed jazz.", 1, kind="episodic")[1].importance == 4


def test_the_count_is_the_memories_themselves_so_a_replay_that_finds_its_memory_counts_it():
    """A worker killed after the memory landed but before anything else did: the replay finds
    the memory; the count, read from the memories, already holds it."""
    s = budgeted(1)
    first, _ = apply(s, 1, "Ana likes tea.", 0)
    for key in list(s.tables.applied):
        del s.tables.applied[key]
    s.tables.users["u"] = {"memories": 0, "clock": T0.isoformat()}  # its users write lost
    replayed, _ = apply(s, 1, "Ana likes tea.", 0)
    assert replayed.memory_id == first.memory_id
    assert "over_write_budget" in apply(s, 2, "Ana likes jazz.", 10)[1].tags


def test_a_memory_stored_past_the_budget_does_not_spend_it():
    s = budgeted(1)
    apply(s, 1, "Ana likes tea.", 0)
    assert "over_write_budget" in apply(s, 2, "Ana likes jazz.", 10)[1].tags
    assert "over_write_budget" in apply(s, 3, "Ana likes chess.", 20)[1].tags
    assert "over_write_budget" not in apply(s, 4, "Ana likes rowing.", 61)[1].tags
