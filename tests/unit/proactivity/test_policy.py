"""Proactivity candidates (seed 000 §11): thresholds, reason and tone, provenance, and the rate
limit with its backoff — all in event time."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from streams.memory.users import record_proactivity_feedback as record_feedback
from streams.memory.model import Memory
from tests import defaults

T0 = datetime(2023, 5, 1, 9, 0, tzinfo=timezone.utc)


def memory(memory_id: str = "m1", **fields) -> Memory:  # type: ignore[no-untyped-def]
    base = dict(id=memory_id, user_id="ana", type="semantic", category="Personal",
                summary="Ana's mother is in hospital.", importance=4, valence="negative",
                intensity=0.8, trust_score=0.8, created_at=T0, updated_at=T0, last_accessed=T0,
                source_turn_ids=["t1:3"])
    return Memory(**{**base, **fields})


def test_a_strong_negative_event_is_a_soft_check_in_with_its_provenance_and_scores():
    users: dict = {}
    offer = defaults.proactivity().consider(users, memory(), T0)
    assert offer is not None
    assert (offer.reason, offer.tone) == ("check_in", "soft_check_in")
    assert offer.memory_ids == ["m1"] and offer.source_turn_ids == ["t1:3"]
    assert offer.scores.proactivity_weight >= offer.scores.min_weight
    assert offer.scores.trust_score >= offer.scores.min_trust
    assert offer.ts == T0
    # deterministic: the same memory version gives the same id
    assert defaults.proactivity().consider({}, memory(), T0).candidate_id == offer.candidate_id


def test_below_a_threshold_or_without_a_reason_nothing_is_proposed():
    policy = defaults.proactivity()
    assert policy.consider({}, memory(trust_score=0.3), T0) is None
    assert policy.consider({}, memory(importance=1, intensity=0.4), T0) is None
    assert policy.consider({}, memory(valence="neutral", intensity=0.0), T0) is None
    assert policy.consider({}, memory(pinned=False, private=True), T0) is None
    goal = policy.consider({}, memory(category="Goals", valence=None, intensity=None, importance=5), T0)
    assert goal is not None and (goal.reason, goal.tone) == ("goal", "neutral")
    upcoming = memory(valence="positive", intensity=0.3, valid_from=T0 + timedelta(days=3))
    offer = policy.consider({}, upcoming, T0)
    assert offer is not None and (offer.reason, offer.tone) == ("upcoming", "friendly")


def test_rate_limited_per_user_in_event_time_with_backoff_when_ignored():
    policy = defaults.proactivity(max_per_day=5, min_interval=timedelta(hours=6))
    users: dict = {}
    assert policy.consider(users, memory("a"), T0) is not None
    assert policy.consider(users, memory("b"), T0 + timedelta(hours=5)) is None, "too soon"
    assert policy.consider(users, memory("c"), T0 + timedelta(hours=6)) is not None
    assert policy.consider({}, memory("d", user_id="bo"), T0) is not None, "per user"
    # ignored twice: the interval doubles each time (6 h -> 24 h)
    record_feedback(users, "ana", acted=False)
    record_feedback(users, "ana", acted=False)
    assert policy.consider(users, memory("e"), T0 + timedelta(hours=29)) is None
    assert policy.consider(users, memory("f"), T0 + timedelta(hours=30)) is not None
    # acted on: back to the base interval
    record_feedback(users, "ana", acted=True)
    assert policy.consider(users, memory("g"), T0 + timedelta(hours=36)) is not None


def test_at_most_max_per_day():
    policy = defaults.proactivity(max_per_day=2, min_interval=timedelta(minutes=1))
    users: dict = {}
    sent = [policy.consider(users, memory(f"m{i}"), T0 + timedelta(hours=i)) for i in range(4)]
    assert [s is not None for s in sent] == [True, True, False, False]
    assert policy.consider(users, memory("next"), T0 + timedelta(days=1)) is not None
