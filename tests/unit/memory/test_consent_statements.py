"""Consent by the user's own words, and the mark a waiting change leaves on the current value
(seed 001 §10, `streams.memory.consent`), on the real memory state over sealed tables."""
from __future__ import annotations

from datetime import timedelta

import pytest

from streams.memory import consent
from streams.memory.candidates import apply_candidate
from streams.memory.commands import apply_command
from streams.memory.state import MemoryState
from tests.unit.memory.test_consent import T0, active, consent_cmd, state, vec, verbs
from topics.candidates import Candidate, Fact
from topics.turns import Turn
from tests import defaults


def said(turn_id: str, text: str, summary: str, key: str | None = "profile:home:city",
         minutes: float = 0, role: str = "user", source_refs: list[str] | None = None) -> Candidate:
    """A candidate from a turn that says `text`, written as `summary`."""
    turn = Turn(user_id="u", thread_id="t1", turn_id=turn_id, role=role, speaker="Ana", text=text,  # type: ignore[arg-type]
                ts=T0 + timedelta(minutes=minutes))
    return Candidate(turn=turn, fact=Fact(type="semantic", summary=summary, entity_key=key),
                     fact_index=0, fact_count=1, confidence=0.9, source_refs=source_refs or [])


def lives_in_lisbon(s: MemoryState) -> str:
    lisbon = apply_candidate(s, said("1", "I live in Lisbon.", "Ana lives in Lisbon."), vec(1, 0))
    assert lisbon.outcome == "created"
    return lisbon.memory_id


def marked(s: MemoryState) -> dict[str, str]:
    """Summary -> proposed summary of every memory carrying a pending change."""
    docs = (s.memory(key) for key in list(s.tables.memories))
    return {m.summary: m.pending_change.proposed_summary for m in docs
            if m is not None and m.pending_change is not None}


@pytest.mark.parametrize(("text", "summary", "key"), [
    ("I moved to Berlin last month.", "Ana moved to Berlin in April 2024.", "profile:home:city"),
    ("Call me Sam.", "Call Ana Sam.", "profile:name"),
    ("My pronouns are they/them now.", "Ana's pronouns are they/them now.", "profile:pronouns"),
])
def test_a_change_the_user_states_in_the_first_person_applies_at_once(text, summary, key):
    s = state()
    first = {"profile:home:city": ("I live in Lisbon.", "Ana lives in Lisbon."),
             "profile:name": ("My name is Samantha.", "Ana's name is Samantha."),
             "profile:pronouns": ("My pronouns are she/her now.", "Ana's pronouns are she/her now.")}
    old = apply_candidate(s, said("1", *first[key], key=key), vec(1, 0)).memory_id
    changed = apply_candidate(s, said("2", text, summary, key=key, minutes=5), vec(0.6, 0.8))
    assert changed.outcome == "superseded"
    assert active(s) == [summary] and s.memory(old).state == "superseded"
    assert consent.pending_proposals(s, "u", None) == [] and marked(s) == {}
    [decision] = [e for e in changed.events if e.meta.get("subject") == "consent"]
    assert decision.meta["decision"] == "applied"
    assert decision.meta["acknowledged_by"] == "own_statement" and decision.meta["by_turn"] == "t1:2"
    assert verbs(s, decision.memory_id) == ["CONSENT_APPLIED"]
    assert s.history(decision.memory_id)[-1]["actor"] == "Ana"


@pytest.mark.parametrize("candidate", [
    said("2", "My friend says I live in Berlin now.", "Ana's friend says Ana lives in Berlin now.",
         minutes=5),                                                          # third party
    said("2", "I guess I live in Berlin now.", "Ana lives in Berlin now.", minutes=5),  # a hedge
    said("2", "Loving my new flat in Berlin!", "Ana lives in Berlin.", minutes=5),      # inferred
    said("2", "I moved to Berlin.", "Ana lives in Berlin.", key=None, minutes=5),       # no key of its own
    said("2", "I see you've moved to Berlin.", "The user moved to Berlin.", minutes=5,
         role="assistant"),                                                   # the assistant's words
    said("2", "I moved to Berlin.", "On 2024-05-01 Ana talked about moving to Berlin.", minutes=5,
         source_refs=["t1:1", "t1:2"]),                                       # an episode's window
], ids=["third_party", "hedged", "inferred", "unkeyed", "assistant", "episode"])
def test_any_other_change_waits_and_marks_the_current_value(candidate):
    s = state()
    lisbon = lives_in_lisbon(s)
    held = apply_candidate(s, candidate, vec(0.6, 0.8))
    assert held.outcome == "proposed"
    assert active(s) == ["Ana lives in Lisbon."]
    current = s.memory(lisbon)
    assert current.pending_change is not None
    assert current.pending_change.proposal_id == held.memory_id
    assert current.pending_change.proposed_summary == candidate.fact.summary
    assert current.pending_change.field == "city"
    assert current.pending_change.expires_at == candidate.turn.ts + timedelta(days=7)
    assert current.version == 1, "the mark is not a change of the memory"
    assert consent.pending_note(current) == f" (change pending: {candidate.fact.summary})"


def reported_berlin(s: MemoryState) -> str:
    held = apply_candidate(s, said("2", "My friend says I live in Berlin now.", "Ana lives in Berlin.",
                        minutes=5), vec(0.6, 0.8))
    assert held.outcome == "proposed"
    return held.memory_id


def test_the_mark_goes_when_the_proposal_is_accepted_rejected_or_expires():
    accepted, rejected, expired = state(), state(), state()
    for s in (accepted, rejected, expired):
        lives_in_lisbon(s)
        reported_berlin(s)
        assert marked(s) == {"Ana lives in Lisbon.": "Ana lives in Berlin."}
    pid = consent.pending_proposals(accepted, "u", None)[0]["id"]
    apply_command(accepted, consent_cmd("c1", 60, proposal_id=pid), None)
    assert active(accepted) == ["Ana lives in Berlin."] and marked(accepted) == {}
    pid = consent.pending_proposals(rejected, "u", None)[0]["id"]
    apply_command(rejected, consent_cmd("c1", 60, "reject", pid), None)
    assert active(rejected) == ["Ana lives in Lisbon."] and marked(rejected) == {}
    consent.expire_due(expired, "u", T0 + timedelta(days=8), "lifecycle")
    assert active(expired) == ["Ana lives in Lisbon."] and marked(expired) == {}


def test_a_newer_proposal_moves_the_mark_and_the_users_own_statement_settles_it():
    s = state()
    lives_in_lisbon(s)
    first = reported_berlin(s)
    second = apply_candidate(s, said("3", "My friend says I live in Porto now.", "Ana lives in Porto.",
                          minutes=10), vec(0, 1))
    assert marked(s) == {"Ana lives in Lisbon.": "Ana lives in Porto."}
    own = apply_candidate(s, said("4", "I moved to Madrid.", "Ana moved to Madrid.", minutes=15), vec(0.8, 0.6))
    assert own.outcome == "superseded" and active(s) == ["Ana moved to Madrid."]
    assert consent.pending_proposals(s, "u", None) == []
    assert verbs(s, first) == ["CONSENT_PROPOSED", "CONSENT_REPLACED"]
    assert verbs(s, second.memory_id) == ["CONSENT_PROPOSED", "CONSENT_REPLACED"]
    assert [m for m in marked(s) if m in active(s)] == [], "no current value waits for a change"


def test_a_replayed_held_candidate_keeps_one_mark():
    s = state()
    lisbon = lives_in_lisbon(s)
    reported_berlin(s)
    before = s.memory(lisbon)
    again = apply_candidate(s, said("2", "My friend says I live in Berlin now.", "Ana lives in Berlin.",
                         minutes=5), vec(0.6, 0.8))
    assert again.replayed and s.memory(lisbon) == before


def test_disabled_consent_applies_a_reported_change_without_a_mark():

    s = state(defaults.consent(enabled=False))
    lives_in_lisbon(s)
    assert apply_candidate(s, said("2", "My friend says I live in Berlin now.", "Ana lives in Berlin.",
                        minutes=5), vec(0.6, 0.8)).outcome == "superseded"
    assert marked(s) == {}


def test_dont_remember_this_withdraws_the_proposal_of_the_turn_before_and_keeps_the_value():
    from topics.commands import Command

    s = state()
    lisbon = lives_in_lisbon(s)
    pid = reported_berlin(s)
    cmd = Command(command_id="t1:3:dont_remember", kind="dont_remember", user_id="u",
                  thread_id="t1", turn_id="3", ts=T0 + timedelta(minutes=6), actor="Ana")
    result = apply_command(s, cmd, None)
    assert [e.meta.get("decision") for e in result.events] == ["rejected"]
    assert result.events[0].meta["taken_back"] is True
    assert s.memory(lisbon).state == "active" and marked(s) == {}
    assert consent.pending_proposals(s, "u", None) == []
    assert verbs(s, pid) == ["CONSENT_PROPOSED", "CONSENT_REJECTED"]
