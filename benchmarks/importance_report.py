"""Whether importance separates small talk from facts, and what the TTL would purge (issue 20).

The TTL soft-deletes, then purges, memories of importance at most `TTL_IMPORTANCE_MAX`
(`streams/lifecycle/forgetting.py`), so importance 1 must mean small talk. Measured on a
labelled set (`tests/data/importance_labels.jsonl`: turns written for this project, modelled on
the kinds of turns in the LoCoMo development conversations, each labelled `keep` — a fact a user
may ask about later — or `trivia`), each turn through the worker's rules extraction as a user
turn:

- `ttl_precision`: of the memories the TTL would purge, the share that is trivia (target 0.9);
- `facts_kept`: of the memories made from `keep` turns, the share above the TTL's reach;
- the importance distribution per label (and, given LoCoMo files, of every memory their turns
  make), and how many turns of each label store anything at all.

    python -m benchmarks.importance_report [--labels FILE] [../shared/datasets/locomo/conv-*.json]
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from streams.settings import Settings, get_settings
from streams.tools.locomo import load_conversation
from streams.write.facts import FactPipeline
from topics.turns import Role, Turn

LABELS = Path(__file__).resolve().parents[1] / "tests" / "data" / "importance_labels.jsonl"
_TS = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


def load_labels(path: Path = LABELS) -> list[tuple[str, str]]:
    """(text, label) rows of a labelled set; label `keep` or `trivia`."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(row["text"], row["label"]) for row in rows]


def importances(pipeline: FactPipeline, text: str, n: int) -> list[int]:
    """The importance of each memory the rules extraction makes of `text` as a user's turn."""
    turn = Turn(user_id="calibration", thread_id="t", turn_id=str(n), role=Role.user,
                speaker="Sam", text=text, ts=_TS)
    return [fact.importance for fact in pipeline.facts(turn).facts]


def importance_report(labels: list[tuple[str, str]], settings: Settings,
                      conversations: list[Path] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    """The figures of the module doc."""
    pipeline = FactPipeline(settings.write)
    cut = settings.lifecycle.ttl_importance_max
    levels: dict[str, Counter[int]] = {"keep": Counter(), "trivia": Counter()}
    stored: Counter[str] = Counter()
    turns: Counter[str] = Counter()
    for n, (text, label) in enumerate(labels):
        made = importances(pipeline, text, n)
        turns[label] += 1
        stored[label] += bool(made)
        levels[label].update(made)
    purged = {label: sum(c for level, c in counts.items() if level <= cut)
              for label, counts in levels.items()}
    reached = purged["keep"] + purged["trivia"]
    kept = sum(levels["keep"].values())
    report: dict[str, Any] = {
        "ttl_importance_max": cut,
        "ttl_precision": round(purged["trivia"] / reached, 4) if reached else None,
        "facts_kept": round(1 - purged["keep"] / kept, 4) if kept else None,
        "trivia_reached": purged["trivia"], "facts_reached": purged["keep"],
        "turns": dict(turns), "turns_storing_anything": dict(stored),
        "importance_by_label": {label: dict(sorted(c.items())) for label, c in levels.items()},
    }
    if conversations:
        dev: Counter[int] = Counter()
        for path in conversations:
            for turn in load_conversation(path).turns:
                dev.update(f.importance for f in pipeline.facts(turn).facts)
        report["importance_of_dev_memories"] = dict(sorted(dev.items()))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("conversations", nargs="*", type=Path, help="LoCoMo files (optional)")
    parser.add_argument("--labels", type=Path, default=LABELS, help="labelled turns (JSONL)")
    args = parser.parse_args()
    print(json.dumps(importance_report(load_labels(args.labels), get_settings(),
                                       args.conversations), indent=2))


if __name__ == "__main__":
    main()
