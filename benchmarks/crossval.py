"""Cross-validated recall for `bench locomo --cross-validate` (issue 13 item 5).

The extraction and dedup rules must generalise: the conversations of a run are split into two
halves (in the order given, the first ⌈n/2⌉ against the rest), recall is reported per half and
per LoCoMo question category (numeric ids 1–4, as the data set's README asks), and for each fold
— one half as the development split, the other held out, then the reverse — the gap between
them. Nothing is tuned by the benchmark itself: the halves show whether what was tuned by hand
on some conversations holds on the others; a gap above `GAP_LIMIT` at k=10 says it does not.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.recall import KS, Item, RecallReport

GAP_LIMIT = 0.03
"""Issue 13 item 5: the development and held-out recall must not differ by more than 3 points."""


@dataclass
class QuestionResults:
    """Each scored question's ranked items, kept with its conversation and category."""

    rows: list[tuple[str, int, tuple[str, ...], list[Item]]] = field(default_factory=list)

    def add(self, user_id: str, category: int, evidence: Sequence[str], items: Sequence[Item]) -> None:
        self.rows.append((user_id, category, tuple(evidence), list(items)))

    def report(self, users: Sequence[str] | None = None, category: int | None = None) -> RecallReport:
        """Recall over the questions of `users` (all when None) and `category` (all when None)."""
        wanted = None if users is None else set(users)
        out = RecallReport()
        for user_id, cat, evidence, items in self.rows:
            if (wanted is None or user_id in wanted) and (category is None or cat == category):
                out.add(evidence, items)
        return out


def halves(user_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """The first ⌈n/2⌉ conversations and the rest (order kept: the run's file order)."""
    if len(user_ids) < 2:
        raise ValueError("cross-validation needs at least two conversations")
    cut = (len(user_ids) + 1) // 2
    return list(user_ids[:cut]), list(user_ids[cut:])


def _summary(report: RecallReport) -> dict[str, Any]:
    d = report.as_dict()
    return {"questions": d["questions"], "recall_any": d["recall_any"], "recall_all": d["recall_all"],
            "context_words_mean": d["context_words_mean"]}


def cross_validate(results: QuestionResults, user_ids: Sequence[str],
                   names: Sequence[str] | None = None) -> dict[str, Any]:
    """Recall per half and per category, and both folds' development/held-out gap.

    `names` label the conversations in the report (file names; the user ids when None).
    Returns `{"halves": {"A": {...}, "B": {...}}, "categories": {...}, "folds": [...],
    "max_gap_at_10", "within_limit"}`; each half holds its conversations, its recall and its
    recall per category; a fold's `gap` is development minus held-out recall_any per k.
    """
    labels = dict(zip(user_ids, names or user_ids))
    split = dict(zip("AB", halves(user_ids)))
    categories = sorted({row[1] for row in results.rows})
    out_halves = {}
    for half, users in split.items():
        out_halves[half] = {
            "conversations": [labels[u] for u in users],
            **_summary(results.report(users)),
            "by_category": {str(c): _summary(results.report(users, c)) for c in categories},
        }
    folds = []
    for dev, held in (("A", "B"), ("B", "A")):
        gap = {k: out_halves[dev]["recall_any"][k] - out_halves[held]["recall_any"][k] for k in KS}
        by_category = {str(c): out_halves[dev]["by_category"][str(c)]["recall_any"][10]
                       - out_halves[held]["by_category"][str(c)]["recall_any"][10]
                       for c in categories}
        folds.append({"dev": dev, "held_out": held, "gap_recall_any": gap,
                      "gap_recall_any_at_10_by_category": by_category})
    max_gap = max(abs(f["gap_recall_any"][10]) for f in folds)
    return {
        "halves": out_halves,
        "categories": {str(c): _summary(results.report(None, c)) for c in categories},
        "folds": folds,
        "max_gap_at_10": max_gap,
        "gap_limit": GAP_LIMIT,
        "within_limit": max_gap <= GAP_LIMIT,
    }


def _at(by_k: dict[Any, float], k: int) -> float:
    """`by_k[k]`, also from a report read back from JSON (whose keys are strings)."""
    return by_k[k] if k in by_k else by_k[str(k)]


def render_rows(cv: dict[str, Any]) -> list[tuple[str, ...]]:
    """Table rows (label, recall_any@5, @10, @20, questions) for a plain or rich table."""
    def row(label: str, s: dict[str, Any]) -> tuple[str, ...]:
        return (label, *(f"{_at(s['recall_any'], k):.3f}" for k in KS), str(s["questions"]))

    rows = []
    for half, s in cv["halves"].items():
        rows.append(row(f"half {half} ({', '.join(s['conversations'])})", s))
        rows.extend(row(f"  half {half} category {c}", cs) for c, cs in s["by_category"].items())
    rows.extend(row(f"all, category {c}", s) for c, s in cv["categories"].items())
    for fold in cv["folds"]:
        rows.append((f"gap dev {fold['dev']} - held-out {fold['held_out']}",
                     *(f"{_at(fold['gap_recall_any'], k):+.3f}" for k in KS), ""))
    return rows
