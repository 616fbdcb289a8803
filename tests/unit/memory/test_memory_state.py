
import numpy as np
import pytest

from streams.memory.candidates import apply_candidate, check_band
from streams.memory.commands import apply_command
from streams.memory.documents import candidate_id
from streams.memory.purge import purge_user
from streams.memory.state import MemoryState
from streams.pipeline.tables import stage_tables
from streams.privacy.crypto import new_key
from streams.memory.tables import topic_marker_id
from streams.privacy.sealed import TABLE_OWNERS
from streams.memory.vector_index import VectorIndex
from streams.providers.embedders import EmbedderProfile
from topics.candidates import Candidate, Fact
from topics.turns import Turn
from tests import defaults

# The seed 002 bands: these tests check the decision logic, not MiniLM's calibration.
SEED_BANDS = EmbedderProfile("seed-bands", 384, 0.90, 0.80, 0.92, 0.85)


def state(raw: dict | None = None) -> MemoryState:
    """Memory state over sealed dict tables (`raw`, by table name, gets the stored values)."""
    raw = {name: {} for name in TABLE_OWNERS} if raw is None else raw
    tables = stage_tables(raw, {}, new_key()).memory
    return MemoryState(tables, VectorIndex(2),
                       defaults.dedup(SEED_BANDS))


def cand(turn_id: str, summary: str, index: int = 0, thread: str = "t1") -> Candidate:
    turn = Turn(user_id="u", thread_id=thread, turn_id=turn_id, role="user", speaker="Ana", text="x",
                ts="2024-05-01T10:00:00+00:00")  # type: ignore[arg-type]
    return Candidate(turn=turn, fact=Fact(type="semantic", summary=summary, tags=[turn_id]),
                     fact_index=index, fact_count=index + 1, confidence=0.9)


def vec(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_create_then_update_extends_provenance_and_bumps_revision():
    s = state()
    first = apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    assert first.outcome == "created" and first.memory_id == candidate_id(cand("1", "x"))
    second = apply_candidate(s, cand("2", "Ana has a dog called Luna."), vec(0.99, 0.05))
    assert second.outcome == "updated" and second.memory_id == first.memory_id
    memory = s.memory(first.memory_id)
    assert memory.source_turn_ids == ["t1:1", "t1:2"] and memory.tags == ["1", "2"]
    assert memory.version == 2
    assert [e.rev for e in first.events + second.events] == [1, 2]


def test_replay_changes_nothing_and_returns_the_same_events():
    s = state()
    first = apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    snapshot = dict(s.tables.memories), dict(s.tables.thread_revs)
    again = apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    assert again.replayed and again.events == first.events
    assert (dict(s.tables.memories), dict(s.tables.thread_revs)) == snapshot


def test_distinct_facts_become_distinct_memories_with_per_thread_revisions():
    s = state()
    a = apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    b = apply_candidate(s, cand("2", "Ana works in Lisbon.", thread="t2"), vec(0, 1))
    assert a.memory_id != b.memory_id
    assert [e.rev for e in a.events] == [1] and [e.rev for e in b.events] == [1]
    assert s.tables.users["u"]["memories"] == 2


def keyed(turn_id: str, summary: str, key: str) -> Candidate:
    c = cand(turn_id, summary)
    return c.model_copy(update={"fact": c.fact.model_copy(update={"entity_key": key})})


def test_a_changed_fact_supersedes_never_overwrites():
    s = state()
    old = apply_candidate(s, keyed("1", "Ana's dog Luna is 3 years old.", "profile:pet:luna:age"), vec(1, 0))
    new = apply_candidate(s, keyed("2", "Ana's dog Luna is 4 years old.", "profile:pet:luna:age"), vec(0.9, 0.1))
    assert new.outcome == "superseded"
    assert [e.kind for e in new.events] == ["created", "superseded"]
    before, after = s.memory(old.memory_id), s.memory(new.memory_id)
    assert before.state == "superseded" and before.superseded_by == after.id
    assert before.valid_to == after.valid_from
    assert after.state == "active" and before.id in after.related_ids
    active = [m for m in s.index.user("u").docs.values() if m.is_visible]
    assert [m.summary for m in active] == ["Ana's dog Luna is 4 years old."]
    assert [h["verb"] for h in s.history(old.memory_id)] == ["ADD", "SUPERSEDE"]
    assert s.history(old.memory_id)[1]["old"]["state"] == "active"


def test_a_keyed_fact_meets_the_current_memory_with_its_key_only():
    """The keyed lookup follows changes: after 3 -> 4 the next change supersedes the memory
    saying 4 (the superseded one no longer has the key), a `*` part matches any one part, and
    an unrelated key matches nothing."""
    s = state()
    three = apply_candidate(s, keyed("1", "Ana's dog Luna is 3 years old.", "profile:pet:luna:age"), vec(1, 0))
    four = apply_candidate(s, keyed("2", "Ana's dog Luna is 4 years old.", "profile:pet:luna:age"), vec(0, 1))
    five = apply_candidate(s, keyed("3", "Luna is 5 now.", "profile:*:luna:age"), vec(-1, 0))
    assert five.outcome == "superseded"
    assert s.memory(four.memory_id).superseded_by == five.memory_id
    assert s.memory(three.memory_id).superseded_by == four.memory_id
    other = apply_candidate(s, keyed("4", "Ana's cat Milo is 2 years old.", "profile:pet:milo:age"), vec(0, -1))
    assert other.outcome == "created"
    again = apply_candidate(s, keyed("5", "Luna is 5 now.", "profile:pet:luna:age"), vec(0.6, 0.8))
    assert (again.outcome, again.memory_id) == ("updated", five.memory_id)


def test_the_vector_is_held_once_in_ram_and_kept_in_the_document():
    """The index keeps a memory's vector in its matrix only, not again as `embedding_b64` in
    its document; a document changed from the index's copy (a merge) is stored with it still."""
    s = state()
    first = apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    stored = s.memory(first.memory_id).embedding_b64
    assert stored and s.index.user("u").docs[first.memory_id].embedding_b64 is None
    merged = apply_candidate(s, cand("2", "Ana has a dog named Luna."), vec(1, 0))
    assert (merged.outcome, merged.memory_id) == ("updated", first.memory_id)
    assert s.memory(first.memory_id).version == 2
    assert s.memory(first.memory_id).embedding_b64 == stored


def test_changes_since_a_revision_are_logged_newest_first():
    s = state()
    apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    apply_candidate(s, cand("2", "Ana works in Lisbon."), vec(0, 1))
    assert [c["summary"] for c in s.changes_since("u", "t1", 0)] == [
        "Ana works in Lisbon.", "Ana has a dog named Luna."]
    assert [c["summary"] for c in s.changes_since("u", "t1", 1)] == ["Ana works in Lisbon."]
    assert s.current_rev("u", "t1") == 2


def test_purge_leaves_only_content_free_tombstones():
    from datetime import datetime, timezone

    raw = {name: {} for name in TABLE_OWNERS}
    s = state(raw)
    a = apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    other = apply_candidate(s, cand("1", "Bo has a cat named Mia.").model_copy(update={"turn": cand(
        "1", "x").turn.model_copy(update={"user_id": "bo"})}), vec(0, 1))
    assert "Luna" not in repr(raw), "tables keep content sealed, never in clear"
    events = purge_user(s, "u", "t1", datetime(2024, 6, 1, tzinfo=timezone.utc))
    assert [e.kind for e in events] == ["purged"] and events[0].summary == ""
    assert a.memory_id not in s.tables.memories and "u" not in s.tables.users
    readable = repr(dict(s.tables.thread_revs.items())) + repr(dict(s.tables.applied.items()))
    assert "Luna" not in readable + repr(dict(s.tables.audit.items()))
    assert [h["verb"] for h in s.history(a.memory_id)] == ["PURGE"]
    assert s.memory(other.memory_id).summary == "Bo has a cat named Mia.", "other users untouched"
    replay = apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    assert replay.replayed and a.memory_id not in s.tables.memories, "a replay does not resurrect it"


def test_an_llm_same_fact_answer_decides_the_check_band():
    s = state()
    first = apply_candidate(s, cand("1", "Ana's favourite band is Radiohead."), vec(1, 0))
    # cosine 0.85: check band; the heuristics alone would call these different facts
    said = cand("2", "Ana loves listening to Thom Yorke's group the most.")
    assert check_band(s, said, vec(0.85, 0.527))[0].id == first.memory_id
    merged = apply_candidate(s, said, vec(0.85, 0.527), same_fact={first.memory_id: True})
    assert merged.outcome == "updated" and merged.memory_id == first.memory_id


def test_related_memories_are_linked_both_ways_once():
    """An edge is stored once, on the memory that made it; the index serves it from both ends,
    and again after a rebuild from the table (a recovery)."""
    s = state()
    a = apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    b = apply_candidate(s, cand("2", "Ana walks Luna on the beach every morning."), vec(0.7, 0.714))
    apply_candidate(s, cand("2", "Ana walks Luna on the beach every morning."), vec(0.7, 0.714))  # replay
    strength = pytest.approx(0.7, abs=1e-3)
    assert s.memory(a.memory_id).relations == {}, "the older memory's document is not rewritten"
    assert s.memory(b.memory_id).relations == {a.memory_id: strength}
    assert [h["verb"] for h in s.history(a.memory_id)] == ["ADD"]
    assert [h["verb"] for h in s.history(b.memory_id)] == ["ADD", "LINK"]
    far = apply_candidate(s, cand("3", "Ana works as a nurse."), vec(0, 1))
    assert s.memory(far.memory_id).relations == {b.memory_id: pytest.approx(0.714, abs=1e-3)}

    def served() -> dict[str, dict[str, float]]:
        docs = s.index.user("u").docs
        return {m: dict(docs[m].relations) for m in (a.memory_id, b.memory_id, far.memory_id)}

    before = served()
    assert before[a.memory_id] == {b.memory_id: strength}
    assert before[b.memory_id] == {a.memory_id: strength, far.memory_id: pytest.approx(0.714, abs=1e-3)}
    assert s.index.user("u").docs[a.memory_id].related_ids == [b.memory_id]
    s.index.rebuild(s.memory(m) for m in (far.memory_id, b.memory_id, a.memory_id))
    assert served() == before


def test_a_merge_into_a_memory_others_point_at_keeps_its_own_edges_only():
    """The write side reads stored documents: merging a restatement into the older memory must
    not copy the edge the newer one made into the older one's document."""
    s = state()
    a = apply_candidate(s, cand("1", "Ana has a dog named Luna."), vec(1, 0))
    b = apply_candidate(s, cand("2", "Ana walks Luna on the beach every morning."), vec(0.7, 0.714))
    assert b.memory_id in s.index.user("u").docs[a.memory_id].relations, "served with it"
    merged = apply_candidate(s, cand("3", "Ana has a dog called Luna."), vec(1, 0))
    assert merged.outcome == "updated" and merged.memory_id == a.memory_id
    assert b.memory_id not in s.memory(a.memory_id).relations


def test_blocking_a_topic_is_announced_audited_and_purged_with_the_user():
    from datetime import datetime, timezone

    from topics.commands import Command

    s = state()
    ts = datetime(2024, 6, 1, tzinfo=timezone.utc)
    block = Command(command_id="b1", kind="block_topic", user_id="u", ts=ts, topic="Cello")
    [event] = apply_command(s, block, None).events
    assert event.meta["topic"] == "cello" and s.blocked_topics("u") == ["cello"]
    assert s.changes_since("u", "commands", 0)[0]["summary"] == "Blocked topic: cello"
    marker = topic_marker_id("u", "b1")
    assert "cello" not in marker, "nothing of the topic in an id"
    assert event.memory_id == marker and [h["verb"] for h in s.history(marker)] == ["UPDATE"]
    purge_user(s, "u", "commands", ts)
    assert s.blocked_topics("u") == [] and not s.history(marker)


def test_a_correction_said_as_an_event_updates_semantic_memory_not_episodic():
    s = state()
    apply_candidate(s, cand("1", "Ana's dog Luna is 3 years old."), vec(1, 0))
    said = cand("2", "Ana's dog Luna turned 4 last week.")
    said = said.model_copy(update={"fact": said.fact.model_copy(update={"type": "episodic"})})
    result = apply_candidate(s, said, vec(0.95, 0.312))
    assert result.outcome == "superseded"
    active = [m for m in s.index.user("u").docs.values() if m.is_visible]
    assert [(m.type, m.summary) for m in active] == [("semantic", "Ana's dog Luna turned 4 last week.")]
