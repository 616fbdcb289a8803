"""What the rules extractor writes from LoCoMo conversations, and what it costs per turn.

`python -m benchmarks.extraction_profile ../shared/datasets/locomo/conv-*.json` prints, as
JSON, the extraction time per turn (the rules alone: no embedding, no dedup) and how the facts
spread over importance levels, categories and valence — the figures that tell whether
importance and category discriminate (issue 13) and whether ingest stays cheap.
"""
from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from streams.tools.locomo import load_conversation
from streams.write.extraction import RulesExtractor
from topics.turns import Turn


def profile(turns: list[Turn], warmup: int = 50) -> dict[str, object]:
    """Extraction of every turn, timed after `warmup` turns (imports, caches)."""
    extractor = RulesExtractor()
    for turn in turns[:warmup]:
        extractor.extract(turn)
    extractor = RulesExtractor()
    importance: Counter[int] = Counter()
    category: Counter[str] = Counter()
    valence: Counter[str] = Counter()
    dated = 0
    started = time.perf_counter()
    facts = [f for turn in turns for f in extractor.extract(turn)]
    elapsed = time.perf_counter() - started
    for fact in facts:
        importance[fact.importance] += 1
        category[fact.category] += 1
        valence[fact.valence or "none"] += 1
        dated += fact.event_start is not None
    return {
        "turns": len(turns), "facts": len(facts),
        "ms_per_turn": round(1000 * elapsed / max(1, len(turns)), 3),
        "importance": {str(k): importance[k] for k in sorted(importance)},
        "category": dict(category.most_common()), "valence": dict(valence.most_common()),
        "facts_with_mentioned_dates": dated,
    }


def main(argv: list[str] | None = None) -> None:
    paths = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        raise SystemExit("usage: python -m benchmarks.extraction_profile CONVERSATION.json ...")
    turns = [t for p in paths for t in load_conversation(p).turns]
    print(json.dumps(profile(turns), indent=2))


if __name__ == "__main__":
    main()
