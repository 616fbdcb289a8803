"""The sensitive-data rule on its labelled set (issue 48): recall >= 0.95 on sensitive sentences,
at most 2 % of ordinary facts refused (`python -m benchmarks.policy_report` prints the figures
per kind). The set (`tests/data/sensitive_labelled.jsonl`) was written for memstream: sentences
said in chat and fact summaries, across the kinds seed 004 §2 and §9 hold back, and ordinary
facts, many of them near misses ("I work at a pharmacy", "my dog takes medicine")."""
from __future__ import annotations

from collections import Counter

from benchmarks.policy_report import FALSE_REFUSAL_GOAL, RECALL_GOAL, labelled_report, labelled_rows
from streams.settings import WriteSettings
from streams.write.write_policy import WritePolicy

SENSITIVE_KINDS = {"health_condition", "medication", "mental_health", "sexuality", "religion",
                   "politics", "union", "biometric", "finance", "address", "credentials"}


def test_the_set_is_large_and_covers_every_kind():
    rows = labelled_rows()
    assert len({r["text"] for r in rows}) == len(rows), "no sentence twice"
    sensitive = Counter(r["kind"] for r in rows if r["sensitive"])
    ordinary = Counter(r["kind"] for r in rows if not r["sensitive"])
    assert sum(sensitive.values()) >= 200 and sum(ordinary.values()) >= 200
    assert set(sensitive) == SENSITIVE_KINDS and all(n >= 14 for n in sensitive.values())
    assert {f"near_{k}" for k in ("health", "medication", "mental_health", "sexuality", "religion",
                                  "politics", "union", "biometric", "finance", "address",
                                  "credentials")} <= set(ordinary)


def test_the_policy_meets_its_goals_on_the_labelled_set():
    report = labelled_report(WritePolicy.of(WriteSettings()))
    assert report["recall"] >= RECALL_GOAL, report["missed"]
    assert report["false_refusal_rate"] <= FALSE_REFUSAL_GOAL, report["refused_wrongly"]
    for kind, figures in report["per_kind"].items():
        if "recall" in figures:
            assert figures["recall"] >= 0.85, (kind, report["missed"])
        else:
            assert figures["false_refusal_rate"] <= 0.1, (kind, report["refused_wrongly"])
