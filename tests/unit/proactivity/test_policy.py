"""Proactivity candidates: scores and tone (seed 000 §3, §11), thresholds, the per-user
event-time rate limit with backoff on ignored feedback, and replays."""
from datetime import datetime, timedelta

import pytest

from streams.memory.model import Memory
from streams.proactivity import scoring
from streams.proactivity.policy import (
    ProactivityConfig, candidates_of, proactivity_id, rate_state, record_feedback)
from topics.commands import Command
from topics.events import MemoryEvent

T0 = datetime.fromisoformat("2024-05-01T10:00:00+00:00")
CONFIG = ProactivityConfig(min_interval=timedelta(hours=6), backoff_factor=2.0, backoff_max_steps=2)


def memory(n: int, importance: int = 5, valence: str | None = None, intensity: float | None = None,
           **extra) -> Memory:
    return Memory(id=f"m{n}", user_id="u", type="semantic", category="Personal",
                  summary=f"Ana fact {n}.", importance=importance, valence=valence,
                  intensity=intensity, created_at=T0, updated_at=T0, last_accessed=T0,
                  source_turn_ids=[f"s1:{n}"], **extra)


def created(m: Memory, hours: float = 0, kind: str = "created") -> MemoryEvent:
    return MemoryEvent(event_id=f"e-{m.id}-{m.version}", kind=kind, user_id="u", thread_id="s1",  # type: ignore[arg-type]
                       memory_id=m.id, rev=1, ts=T0 + timedelta(hours=hours), summary=m.summary,
                       category=m.category)


def offer(users: dict, m: Memory, hours: float = 0, config: ProactivityConfig = CONFIG):
    return candidates_of(users, [created(m, hours)], {m.id: m}.get, config)


def feedback(users: dict, pid: str, what: str, n: int) -> None:
    record_feedback(users, Command(command_id=f"f{n}", kind="proactivity_feedback", user_id="u",
                                   ts=T0, proactivity_id=pid, feedback=what), CONFIG)  # type: ignore[arg-type]


@pytest.mark.parametrize(("importance", "valence", "intensity", "weight", "tone"), [
    (5, None, None, 0.5, "neutral"),          # unset valence/intensity: neutral, 0.5
    (4, "positive", 0.9, 0.675, "friendly"),
    (4, "negative", 0.9, 0.54, "soft_check_in"),  # negative: x0.8 (seed 000 §3)
    (1, "positive", 1.0, 0.0, "friendly"),
    (3, "-0.7", 0.7, 0.28, "soft_check_in"),  # a signed number as valence
])
def test_weight_and_tone(importance, valence, intensity, weight, tone):
    m = memory(1, importance, valence, intensity)
    assert scoring.proactivity_weight(m) == pytest.approx(weight)
    assert scoring.tone_of(m) == tone


def test_a_candidate_carries_provenance_reason_tone_and_the_scores_it_passed():
    users: dict = {}
    m = memory(1, 4, "positive", 0.9)
    [record] = offer(users, m)
    assert record.memory_ids == ["m1"] and record.source_turn_ids == ["s1:1"]
    assert record.proactivity_id == proactivity_id(m) and record.user_id == "u"
    assert record.tone == "friendly" and record.valence == "positive"
    assert record.scores.proactivity_weight == pytest.approx(0.675)
    assert record.scores.trust_score == 0.7 and record.scores.weight_min == 0.4
    assert "importance 4/5" in record.reason and "Ana" not in record.reason  # no user words
    assert record.ts == T0


def test_thresholds_private_and_hidden_memories_make_no_candidate():
    users: dict = {}
    assert offer(users, memory(1, importance=4)) == []  # 0.375 < 0.4
    assert offer(users, memory(2, trust_score=0.5)) == []
    assert offer(users, memory(3, private=True)) == []
    assert offer(users, memory(4, state="soft_deleted")) == []
    m = memory(5)
    assert candidates_of(users, [created(m, kind="superseded")], {m.id: m}.get, CONFIG) == []
    assert offer(users, memory(6), config=ProactivityConfig(enabled=False)) == []


def test_rate_limited_per_user_in_event_time():
    users: dict = {}
    assert len(offer(users, memory(1), hours=0)) == 1
    assert offer(users, memory(2), hours=5) == []  # within 6 h of event time
    assert len(offer(users, memory(3), hours=6)) == 1


def test_ignored_feedback_backs_off_and_acted_resets_it():
    users: dict = {}
    [first] = offer(users, memory(1), hours=0)
    feedback(users, first.proactivity_id, "ignored", 1)
    feedback(users, first.proactivity_id, "ignored", 2)  # the same record counts once
    assert rate_state(users, "u")["ignored_streak"] == 1
    assert offer(users, memory(2), hours=6) == []  # the interval is now 12 h
    [second] = offer(users, memory(3), hours=12)
    feedback(users, second.proactivity_id, "ignored", 3)
    assert offer(users, memory(4), hours=12 + 23) == []  # 24 h
    [third] = offer(users, memory(5), hours=12 + 24)
    feedback(users, third.proactivity_id, "ignored", 4)  # streak 3, capped at 2 steps: 24 h
    assert len(offer(users, memory(6), hours=12 + 48)) == 1
    feedback(users, proactivity_id(memory(6)), "acted", 5)
    assert rate_state(users, "u")["ignored_streak"] == 0
    assert len(offer(users, memory(7), hours=12 + 48 + 6)) == 1


def test_a_replay_resends_the_same_record_and_never_a_new_one():
    users: dict = {}
    m1, m2 = memory(1), memory(2)
    [record] = offer(users, m1)
    assert offer(users, m2, hours=1) == []  # rate-limited
    assert offer(users, m1, hours=30) == [record]  # the replay: the record of the first time
    assert offer(users, m2, hours=30) == []  # decided then: limited, whatever the rate is now
    updated = m1.model_copy(update={"version": 2})
    [again] = offer(users, updated, hours=30)  # a new version is a new decision
    assert again.proactivity_id != record.proactivity_id
