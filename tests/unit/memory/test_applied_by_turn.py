"""The `applied` records of a turn's candidates are one table value (streams/memory/applied_by_turn.py),
and the per-candidate records written before are still found: replays and purges use them."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from streams.memory.applied_by_turn import AppliedByTurn, legacy_candidate_key, turn_applied_key
from streams.memory.candidates import apply_candidate
from streams.memory.documents import applied_key, candidate_id
from streams.lifecycle.forgetting import purge
from streams.memory.purge import purge_user
from streams.memory.tables import candidate_key, command_key
from streams.privacy.sealed import TABLE_OWNERS, SealedTable, user_first_in_key
from tests.unit.memory.test_memory_state import cand, state, vec

RECORD = {"outcome": "created", "memory_id": "m1", "events": []}


def test_a_turns_candidates_share_one_value_and_other_keys_their_own():
    raw: dict[str, Any] = {}
    applied = AppliedByTurn(raw)
    first, second = candidate_key("u", "t", "1", "c0"), candidate_key("u", "t", "1", "c1")
    applied[first] = RECORD
    applied[second] = {**RECORD, "memory_id": "m2"}
    applied[command_key("u", "x")] = RECORD
    assert sorted(raw) == sorted([turn_applied_key("u", "t", "1"), command_key("u", "x")])
    assert applied[first] == RECORD and applied[second]["memory_id"] == "m2"
    assert first in applied and candidate_key("u", "t", "1", "c2") not in applied
    assert candidate_key("u", "t", "2", "c0") not in applied, "another turn"
    del applied[first]
    assert first not in applied and second in applied
    del applied[second]
    assert turn_applied_key("u", "t", "1") not in raw, "the turn's last record gone: its key too"


def test_ids_of_any_text_keep_their_turns_apart():
    """Ids are free text: quotes, the word "candidate", a lone surrogate (which orjson refuses)."""
    applied = AppliedByTurn({})
    odd = [("u\ud800", "t", "1"), ('u"', '"candidate"', "1"), ("u", "t", '1","x')]
    for n, (user, thread, turn) in enumerate(odd):
        applied[candidate_key(user, thread, turn, "c0")] = {**RECORD, "memory_id": str(n)}
    for n, (user, thread, turn) in enumerate(odd):
        assert applied[candidate_key(user, thread, turn, "c0")]["memory_id"] == str(n)
    assert len(applied) == len(odd)


def test_a_record_written_before_is_read_and_written_where_it_is():
    raw: dict[str, Any] = {legacy_candidate_key("u", "c0"): RECORD}
    applied = AppliedByTurn(raw)
    key = candidate_key("u", "t", "1", "c0")
    assert key in applied and applied[key] == RECORD
    applied[key] = {**RECORD, "events": [{"id": "e"}]}
    assert list(raw) == [legacy_candidate_key("u", "c0")], "scrubbed in place, not copied"


def test_a_turn_that_no_longer_opens_still_blocks_its_replays():
    """A purged user's `applied` values stay, unreadable: a replay of an old turn brings nothing
    back."""
    raw = {name: {} for name in TABLE_OWNERS}
    s = state(raw)
    first = cand("1", "Ana has a dog named Luna.")
    apply_candidate(s, first, vec(1, 0))
    apply_candidate(s, cand("1", "Ana lives in Lisbon.", index=1), vec(0, 1))
    s.tables.flush()
    assert list(raw["applied"]) == [turn_applied_key("u", "t1", "1")], "one value for the turn"
    purge_user(s, "u", "t1", datetime(2024, 6, 1, tzinfo=timezone.utc))
    assert s.is_applied(first) and s.is_applied(cand("1", "x", index=1))
    replay = apply_candidate(s, first, vec(1, 0))
    assert replay.replayed and replay.outcome == "purged"
    assert s.memory(candidate_id(first)) is None


def test_a_candidate_applied_before_the_upgrade_replays_as_it_did():
    raw = {name: {} for name in TABLE_OWNERS}
    s = state(raw)
    first = cand("1", "Ana has a dog named Luna.")
    done = apply_candidate(s, first, vec(1, 0))
    s.tables.flush()
    applied = SealedTable(raw["applied"], s.tables.applied.table.table.sealer, user_first_in_key)
    (turn_key, turn), = applied.items()
    applied[legacy_candidate_key("u", candidate_id(first))] = turn["candidates"][candidate_id(first)]
    del applied[turn_key]  # the table as the version before left it
    replay = apply_candidate(s, first, vec(1, 0))
    assert replay.replayed and replay.events == done.events
    assert applied_key(first) in s.tables.applied


def test_a_replay_after_a_lifecycle_purge_reports_what_the_first_run_did():
    """A memory purged by the lifecycle (purge_at) inside the uncommitted window of its turn: a
    crash replays the candidate, which must report the first run's outcome (the progress of the
    uninterrupted run), bring nothing back and send none of the purged memory's events."""
    s = state()
    first = cand("1", "Ana has a dog named Luna.")
    done = apply_candidate(s, first, vec(1, 0))
    assert done.outcome == "created" and done.events
    memory = s.memory(done.memory_id)
    purge(s, memory, datetime(2024, 6, 1, tzinfo=timezone.utc))
    replay = apply_candidate(s, first, vec(1, 0))
    assert replay.replayed
    assert (replay.outcome, replay.memory_id) == ("created", done.memory_id)
    assert replay.events == []
    assert s.memory(done.memory_id).state == "purged"
