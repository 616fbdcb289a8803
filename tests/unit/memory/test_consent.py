"""Consent for profile changes (seed 001 §10), on the real memory state over sealed tables."""
from datetime import datetime, timedelta

import numpy as np
import pytest

from streams.memory import consent
from streams.memory.candidates import apply_candidate
from streams.memory.commands import CommandError, apply_command
from streams.memory.config import ConsentConfig
from streams.memory.state import MemoryState
from streams.memory.vector_index import VectorIndex
from streams.pipeline.tables import stage_tables
from streams.privacy.crypto import new_key
from streams.privacy.sealed import TABLE_OWNERS
from streams.providers.embedders import EmbedderProfile
from topics.candidates import Candidate, Fact
from topics.commands import Command
from topics.turns import Turn
from tests import defaults

BANDS = EmbedderProfile("seed-bands", 384, 0.90, 0.80, 0.92, 0.85)
T0 = datetime.fromisoformat("2024-05-01T10:00:00+00:00")


def state(config: ConsentConfig | None = None) -> MemoryState:
    tables = stage_tables({name: {} for name in TABLE_OWNERS}, {}, new_key()).memory
    return MemoryState(tables, VectorIndex(2),
                       defaults.dedup(BANDS, consent=config or defaults.consent()))


def said(turn_id: str, summary: str, key: str, minutes: float = 0, thread: str = "t1",
         source: str = "chat", confidence: float = 0.9) -> Candidate:
    turn = Turn(user_id="u", thread_id=thread, turn_id=turn_id, role="user", speaker="Ana",
                text="x", ts=T0 + timedelta(minutes=minutes), source=source)  # type: ignore[arg-type]
    return Candidate(turn=turn, fact=Fact(type="semantic", summary=summary, entity_key=key),
                     fact_index=0, fact_count=1, confidence=confidence)


def vec(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def consent_cmd(command_id: str, minutes: float, decision: str = "accept",
                proposal_id: str | None = None, thread: str = "t1") -> Command:
    return Command(command_id=command_id, kind="consent", user_id="u", thread_id=thread,
                   ts=T0 + timedelta(minutes=minutes), decision=decision,  # type: ignore[arg-type]
                   proposal_id=proposal_id, actor="registry")


def active(s: MemoryState) -> list[str]:
    docs = (s.memory(key) for key in list(s.tables.memories))
    return sorted(m.summary for m in docs if m is not None and m.is_visible)


def lived_then_moved(s: MemoryState) -> str:
    """Lisbon applied (a first value), Berlin proposed; the proposal's id."""
    assert apply_candidate(s, said("1", "Ana lives in Lisbon.", "profile:home:city"), vec(1, 0)).outcome == "created"
    held = apply_candidate(s, said("2", "Ana moved to Berlin.", "profile:home:city", minutes=5), vec(0.6, 0.8))
    assert held.outcome == "proposed"
    return held.memory_id


def verbs(s: MemoryState, memory_id: str) -> list[str]:
    return [e["verb"] for e in s.history(memory_id)]


def test_a_sensitive_change_waits_and_the_registry_lists_it():
    s = state()
    pid = lived_then_moved(s)
    assert active(s) == ["Ana lives in Lisbon."]
    [pending] = consent.pending_proposals(s, "u", T0 + timedelta(days=1))
    assert pending["id"] == pid and pending["field"] == "city"
    assert pending["proposed_summary"] == "Ana moved to Berlin."
    assert pending["current_summary"] == "Ana lives in Lisbon."
    assert pending["source_turn_ids"] == ["t1:2"]
    assert verbs(s, pid) == ["CONSENT_PROPOSED"]


def test_consent_applies_it_supersedes_the_old_value_and_audits_the_decision():
    s = state()
    pid = lived_then_moved(s)
    result = apply_command(s, consent_cmd("c1", 60, proposal_id=pid), None)
    assert [e.kind for e in result.events] == ["created", "superseded", "updated"]
    assert active(s) == ["Ana moved to Berlin."]
    berlin = s.memory(result.events[0].memory_id)
    assert berlin.source_turn_ids == ["t1:2"] and berlin.entity_key == "profile:home:city"
    old = s.memory(result.events[1].memory_id)
    assert old.state == "superseded" and old.superseded_by == berlin.id
    assert verbs(s, pid) == ["CONSENT_PROPOSED", "CONSENT_APPLIED"]
    assert s.history(pid)[-1]["actor"] == "registry"
    assert consent.pending_proposals(s, "u", None) == []
    # the same command again changes nothing; another one for the decided proposal is refused
    assert apply_command(s, consent_cmd("c1", 60, proposal_id=pid), None).replayed
    with pytest.raises(CommandError):
        apply_command(s, consent_cmd("c2", 61, proposal_id=pid), None)


def test_a_rejected_proposal_leaves_the_old_value_and_is_audited():
    s = state()
    pid = lived_then_moved(s)
    result = apply_command(s, consent_cmd("c1", 60, "reject", pid), None)
    assert [e.meta["decision"] for e in result.events] == ["rejected"]
    assert active(s) == ["Ana lives in Lisbon."]
    assert verbs(s, pid) == ["CONSENT_PROPOSED", "CONSENT_REJECTED"]


def test_a_proposal_expires_after_seven_days_of_event_time():
    s = state()
    pid = lived_then_moved(s)
    assert consent.pending_proposals(s, "u", T0 + timedelta(days=7, minutes=6)) == []
    # the next change of the user, in event time, expires it for good
    later = apply_candidate(s, said("3", "Ana has a cat named Miso.", "profile:pet:miso:name",
                         minutes=7 * 24 * 60 + 10), vec(0, 1))
    assert [e.meta.get("decision") for e in later.events][0] == "expired"
    assert verbs(s, pid) == ["CONSENT_PROPOSED", "CONSENT_EXPIRED"]
    with pytest.raises(CommandError):
        apply_command(s, consent_cmd("c1", 7 * 24 * 60 + 20, proposal_id=pid), None)
    assert "Ana lives in Lisbon." in active(s)


def test_a_chat_acknowledgement_answers_the_threads_recent_proposal_only():
    s = state()
    lived_then_moved(s)
    elsewhere = apply_command(s, consent_cmd("ack-other-thread", 6, thread="t2"), None)
    assert elsewhere.events == [] and active(s) == ["Ana lives in Lisbon."]
    too_late = apply_command(s, consent_cmd("ack-late", 5 + 31), None)
    assert too_late.events == [] and active(s) == ["Ana lives in Lisbon."]
    s2 = state()
    lived_then_moved(s2)
    apply_command(s2, consent_cmd("ack", 6), None)
    assert active(s2) == ["Ana moved to Berlin."]


def test_a_newer_proposal_for_the_field_replaces_the_pending_one():
    s = state()
    first = lived_then_moved(s)
    second = apply_candidate(s, said("3", "Ana moved to Porto.", "profile:home:city", minutes=10), vec(0, 1))
    assert second.outcome == "proposed"
    assert verbs(s, first) == ["CONSENT_PROPOSED", "CONSENT_REPLACED"]
    assert [p["id"] for p in consent.pending_proposals(s, "u", None)] == [second.memory_id]


def test_a_benign_change_applies_once_corroborated_or_from_a_trusted_source():
    s = state()
    apply_candidate(s, said("1", "Ana prefers detailed answers.", "profile:tone"), vec(1, 0))
    held = apply_candidate(s, said("2", "Ana prefers short answers.", "profile:tone", minutes=1), vec(0, 1))
    assert held.outcome == "proposed" and active(s) == ["Ana prefers detailed answers."]
    again = apply_candidate(s, said("3", "Ana prefers short answers.", "profile:tone", minutes=2), vec(0, 1))
    assert again.outcome == "superseded" and active(s) == ["Ana prefers short answers."]
    assert verbs(s, held.memory_id) == ["CONSENT_PROPOSED", "CONSENT_CORROBORATED"]
    trusted = apply_candidate(s, said("4", "Ana prefers answers in bullet points.", "profile:tone", minutes=3,
                           source="external"), vec(0.6, 0.8))
    assert trusted.outcome == "superseded"


def test_first_values_and_other_keys_are_not_held():
    s = state()
    assert apply_candidate(s, said("1", "Ana's name is Ana.", "profile:name"), vec(1, 0)).outcome == "created"
    apply_candidate(s, said("2", "Ana's dog Luna is 3 years old.", "profile:pet:luna:age"), vec(0, 1))
    changed = apply_candidate(s, said("3", "Ana's dog Luna is 4 years old.", "profile:pet:luna:age", minutes=1),
                      vec(0.1, 1))
    assert changed.outcome == "superseded"


def test_disabled_consent_applies_sensitive_changes_at_once():
    s = state(defaults.consent(enabled=False))
    apply_candidate(s, said("1", "Ana lives in Lisbon.", "profile:home:city"), vec(1, 0))
    assert apply_candidate(s, said("2", "Ana moved to Berlin.", "profile:home:city"), vec(0, 1)).outcome == "superseded"


def test_a_replayed_held_candidate_changes_nothing():
    s = state()
    lived_then_moved(s)
    snapshot = dict(s.tables.users), dict(s.tables.audit)
    again = apply_candidate(s, said("2", "Ana moved to Berlin.", "profile:home:city", minutes=5), vec(0.6, 0.8))
    assert again.replayed and again.outcome == "proposed"
    assert (dict(s.tables.users), dict(s.tables.audit)) == snapshot


@pytest.mark.parametrize(("text", "expected"), [
    ("Yes, update it.", "accept"), ("yes please update it", "accept"), ("Yep, go ahead.", "accept"),
    ("Sure, change my city.", "accept"), ("Go ahead and update it!", "accept"),
    ("No, keep the old one.", "reject"), ("No, don't change it.", "reject"),
    ("Yes, I moved to Berlin last month.", None), ("No", None), ("yes", None),
    ("Change my mind about the trip.", None), ("I need to update my resume.", None),
])
def test_acknowledgements_are_short_answers_only(text, expected):
    turn = Turn(user_id="u", thread_id="t", turn_id="9", role="user", text=text, ts=T0)  # type: ignore[arg-type]
    assert consent.acknowledgement(turn) == expected


def test_an_assistant_turn_is_never_an_acknowledgement():
    turn = Turn(user_id="u", thread_id="t", turn_id="9", role="assistant", text="Yes, update it.", ts=T0)  # type: ignore[arg-type]
    assert consent.acknowledgement(turn) is None


def test_a_proposal_keeps_the_fact_but_not_the_words_of_its_turn():
    s = state()
    apply_candidate(s, said("1", "Ana lives in Lisbon.", "profile:home:city"), vec(1, 0))
    c = said("2", "Ana moved to Berlin.", "profile:home:city", minutes=5)
    c = c.model_copy(update={"turn": c.turn.model_copy(update={"text": "I moved to Berlin, pw hunter2"})})
    apply_candidate(s, c, vec(0.6, 0.8))
    assert "hunter2" not in str(s.tables.users["u"])


@pytest.mark.parametrize(("fields", "ok"), [
    ({"kind": "consent", "decision": "accept", "proposal_id": "consent:x"}, True),
    ({"kind": "consent", "decision": "reject"}, True),
    ({"kind": "consent"}, False),
    ({"kind": "consent", "decision": "maybe"}, False),
])
def test_consent_commands_need_their_arguments(fields, ok):
    raw = {"command_id": "c", "user_id": "u", "ts": T0.isoformat(), **fields}
    if ok:
        Command.model_validate(raw)
    else:
        with pytest.raises(ValueError):
            Command.model_validate(raw)


def test_an_applied_change_is_linked_to_the_users_related_facts():
    s = state()
    work = apply_candidate(s, said("0", "Ana works at a bakery in Berlin.", "profile:job"), vec(0.5, 0.85))
    pid = lived_then_moved(s)
    result = apply_command(s, consent_cmd("c1", 60, proposal_id=pid), None)
    berlin = s.memory(result.events[0].memory_id)
    assert work.memory_id in berlin.relations, "linked as the candidate stage links a new fact"
