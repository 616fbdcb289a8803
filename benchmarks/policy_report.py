"""How the write policy does (`memstream bench policy`): block rate on a secrets corpus, false
positives on real turns, and on the labelled set of sensitive and ordinary sentences
(`tests/data/sensitive_labelled.jsonl`, written for memstream): recall on sensitive sentences
and false refusals of ordinary ones, per kind, with what the policy costs a text.

    python -m benchmarks.policy_report          # the labelled sets alone (no LoCoMo files needed)

The goals (issue 48; `tests/unit/write/test_sensitive_labelled_set.py` fails below them):
recall >= 0.95 on the sensitive sentences, at most 2 % of the ordinary ones refused.
"""
from __future__ import annotations

import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from streams.settings import Settings
from streams.tools.locomo import load_conversation
from streams.write import policy
from streams.write.facts import FactPipeline
from streams.write.write_policy import WritePolicy

LABELLED = Path(__file__).resolve().parents[1] / "tests" / "data" / "sensitive_labelled.jsonl"
HOLDOUT = LABELLED.with_name("sensitive_holdout.jsonl")
"""81 sentences written after the rules were tuned on `LABELLED`, measured once and never tuned
on: the figure to trust for sentences nobody has seen (keep it so: add new ones rather than
fixing the rules to these)."""
RECALL_GOAL = 0.95
FALSE_REFUSAL_GOAL = 0.02


def labelled_rows(path: Path = LABELLED) -> list[dict[str, Any]]:
    """{text, kind, sensitive} per line."""
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def labelled_report(write_policy: WritePolicy, path: Path = LABELLED) -> dict[str, Any]:
    """Recall on the sensitive sentences and false refusals of the ordinary ones, overall and per
    kind, each sentence judged as a fact is (`WritePolicy.refusal`, no consent); the misses and
    the false refusals listed; the mean cost of one judgement."""
    rows = labelled_rows(path)
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    missed, refused_wrongly = [], []
    started = time.perf_counter()
    for row in rows:
        reason = write_policy.refusal(row["text"])
        counts = kinds[row["kind"]]
        counts["sentences"] += 1
        counts["refused"] += reason is not None
        if row["sensitive"] and reason is None:
            missed.append(row)
        if not row["sensitive"] and reason is not None:
            refused_wrongly.append({**row, "reason": reason})
    seconds = time.perf_counter() - started
    sensitive = sum(1 for r in rows if r["sensitive"])
    ordinary = len(rows) - sensitive
    per_kind = {}
    for kind, counts in sorted(kinds.items()):
        is_sensitive = next(r["sensitive"] for r in rows if r["kind"] == kind)
        share = round(counts["refused"] / counts["sentences"], 4)
        per_kind[kind] = {"sentences": counts["sentences"],
                          ("recall" if is_sensitive else "false_refusal_rate"): share}
    return {
        "file": str(path), "sensitive": sensitive, "ordinary": ordinary,
        "recall": round(1 - len(missed) / max(sensitive, 1), 4),
        "false_refusal_rate": round(len(refused_wrongly) / max(ordinary, 1), 4),
        "goals": {"recall": RECALL_GOAL, "false_refusal_rate": FALSE_REFUSAL_GOAL},
        "per_kind": per_kind,
        "missed": [r["text"] for r in missed],
        "refused_wrongly": [f"{r['text']} ({r['reason']})" for r in refused_wrongly],
        "us_per_text": round(seconds / max(len(rows), 1) * 1e6, 1),
    }


def policy_report(corpus: Path, conversations: list[Path], settings: Settings,
                  labelled: Path = LABELLED) -> dict[str, Any]:
    """Secrets corpus: share blocked. LoCoMo turns: share wrongly blocked as secrets, the facts
    held back as sensitive (stored only on explicit request), and the policy's cost per turn.
    The labelled set: `labelled_report`."""
    rows = [json.loads(line) for line in corpus.read_text().splitlines() if line.strip()]
    blocked = [r for r in rows if not policy.is_storable(r["text"])[0]]
    missed_kinds = Counter(r.get("kind", "?") for r in rows if policy.is_storable(r["text"])[0])
    turns = [t for path in conversations for t in load_conversation(path).turns]
    false_positives = [t for t in turns if not policy.is_storable(t.text)[0]]
    pipeline = FactPipeline(settings.write)
    write_policy = pipeline.policy
    write_policy.refusal("warm up")  # the vocabularies load on the first call
    started = time.perf_counter()
    refused_turns = Counter(r for t in turns if (r := write_policy.refusal(t.text)) is not None)
    per_turn_us = (time.perf_counter() - started) / max(len(turns), 1) * 1e6
    held_back: Counter[str] = Counter()
    for turn in turns:
        held_back.update(r for r in pipeline.facts(turn).blocked if r.startswith("sensitive_"))
    return {
        "secrets_corpus": {"lines": len(rows), "blocked": len(blocked),
                           "block_rate": round(len(blocked) / max(len(rows), 1), 4),
                           "missed_by_kind": dict(missed_kinds)},
        "locomo_turns": {"turns": len(turns), "blocked_as_secret": len(false_positives),
                         "false_positive_rate": round(len(false_positives) / max(len(turns), 1), 5),
                         "turns_the_policy_refuses": dict(refused_turns),
                         "facts_held_back_as_sensitive": dict(held_back),
                         "policy_us_per_turn": round(per_turn_us, 1)},
        "labelled_set": labelled_report(write_policy, labelled),
        "held_out_set": labelled_report(write_policy, HOLDOUT),
    }


def main(argv: list[str]) -> None:
    write_policy = WritePolicy.of(Settings().write)
    paths = [Path(a) for a in argv] or [LABELLED, HOLDOUT]
    print(json.dumps({p.name: labelled_report(write_policy, p) for p in paths}, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
