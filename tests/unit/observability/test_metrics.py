"""The seed 003 decision counters, the episodic skip reasons and the consumer-lag gauge's series."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from faust.types import TP

from streams.observability import metrics
from streams.observability.consumer_lag import publish
from streams.write.episodic import after_turn, due, observe
from streams.observability.metrics import REGISTRY, record_decision
from topics.turns import Turn
from tests import defaults

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def counts() -> dict[str, float]:
    return {
        "semantic_creates": value("memstream_semantic_creates_total"),
        "merge": value("memstream_semantic_updates_total", kind="merge"),
        "supersede": value("memstream_semantic_updates_total", kind="supersede"),
        "episodic_creates": value("memstream_episodic_creates_total"),
        "episodic_merges": value("memstream_episodic_merges_total"),
        "duplicate": value("memstream_episodic_skips_total", reason="duplicate"),
    }


@pytest.mark.parametrize(("memory_type", "outcome", "counter"), [
    ("semantic", "created", "semantic_creates"),
    ("semantic", "updated", "merge"),
    ("semantic", "superseded", "supersede"),
    ("episodic", "created", "episodic_creates"),
    ("episodic", "updated", "episodic_merges"),
    ("episodic", "duplicate", "duplicate"),
])
def test_each_decision_moves_exactly_its_seed_003_counter(memory_type: str, outcome: str, counter: str):
    before = counts()
    record_decision(memory_type, outcome, 0.5, 0.001)
    after = counts()
    assert {k: after[k] - before[k] for k in before} == {k: float(k == counter) for k in before}


def test_a_semantic_duplicate_is_no_seed_003_decision_but_is_counted_by_dedup():
    before, decisions = counts(), value("memstream_dedup_decisions_total", type="semantic", decision="duplicate")
    record_decision("semantic", "duplicate", 0.99, 0.001)
    assert counts() == before
    assert value("memstream_dedup_decisions_total", type="semantic", decision="duplicate") == decisions + 1


def test_notability_is_one_minus_the_best_episode_similarity():
    low = value("memstream_episodic_notability_bucket", le="0.3")
    top = value("memstream_episodic_notability_bucket", le="1.0")
    count = value("memstream_episodic_notability_count")
    record_decision("episodic", "updated", 0.8, 0.001)  # notability 0.2
    record_decision("episodic", "created", None, 0.001)  # no episode yet: 1.0
    assert value("memstream_episodic_notability_bucket", le="0.3") == low + 1
    assert value("memstream_episodic_notability_bucket", le="1.0") == top + 2
    assert value("memstream_episodic_notability_count") == count + 2
    assert value("memstream_dedup_similarity_count", type="episodic") >= 1


def turn(text: str, i: int, role: str = "user") -> Turn:
    return Turn(user_id="u", thread_id="t", turn_id=str(i), role=role, speaker="Ana", text=text,
                ts=T0 + timedelta(minutes=i))  # type: ignore[arg-type]


def skips(reason: str) -> float:
    return value("memstream_episodic_skips_total", reason=reason)


def test_an_episode_due_but_not_written_counts_its_reason():
    rules = defaults.episode_rules(cooldown_turns=3, cooldown_minutes=10, max_per_day=1, buffer_turns=8)
    decided = turn("Great, we decided to book the Lisbon flights for June.", 5, role="assistant")
    cooldown, cap = skips("cooldown"), skips("daily_cap")
    assert due({"turns_since": 1, "last_ts": (decided.ts - timedelta(minutes=2)).isoformat()},
               decided, rules) is None
    assert skips("cooldown") == cooldown + 1
    assert due({**after_turn({}, decided, captured=True), "turns_since": 9}, decided, rules) is None
    assert skips("daily_cap") == cap + 1
    assert due({"turns_since": 0}, turn("ok", 6, role="assistant"), rules) is None, "not due"
    assert (skips("cooldown"), skips("daily_cap")) == (cooldown + 1, cap + 1), "not due is no skip"


def test_an_episode_without_a_topic_counts_as_no_topic():
    rules = defaults.episode_rules(cooldown_turns=0, cooldown_minutes=0, max_per_day=5, buffer_turns=8)
    before = skips("no_topic")
    observed = observe(None, turn("Ok, done.", 1, role="assistant"), rules, window_n=10)
    assert observed.episode is None
    assert skips("no_topic") == before + 1


def test_the_lag_gauge_drops_partitions_the_worker_no_longer_holds():
    a, b = TP("chat.turns", 0), TP("chat.turns", 1)
    publish({a: 3, b: 0})
    assert value("memstream_consumer_lag_records", topic="chat.turns", partition="0") == 3
    publish({b: 2})  # partition 0 moved to another worker
    assert REGISTRY.get_sample_value("memstream_consumer_lag_records", {"topic": "chat.turns", "partition": "0"}) is None
    assert value("memstream_consumer_lag_records", topic="chat.turns", partition="1") == 2
    publish({})
    assert metrics.CONSUMER_LAG.collect()[0].samples == []
