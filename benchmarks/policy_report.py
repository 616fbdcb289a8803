"""How the safety policy does: block rate on a secrets corpus, false positives on real turns."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from streams.write import policy
from streams.write.facts import FactPipeline
from streams.tools.locomo import load_conversation
from streams.settings import Settings


def policy_report(corpus: Path, conversations: list[Path], settings: Settings) -> dict[str, Any]:
    """Secrets corpus: share blocked. LoCoMo turns: share wrongly blocked as secrets, and the
    facts held back as sensitive (stored only on explicit request)."""
    rows = [json.loads(line) for line in corpus.read_text().splitlines() if line.strip()]
    blocked = [r for r in rows if not policy.is_storable(r["text"])[0]]
    missed_kinds = Counter(r.get("kind", "?") for r in rows if policy.is_storable(r["text"])[0])
    turns = [t for path in conversations for t in load_conversation(path).turns]
    false_positives = [t for t in turns if not policy.is_storable(t.text)[0]]
    pipeline = FactPipeline(settings.write)
    held_back: Counter[str] = Counter()
    for turn in turns:
        held_back.update(r for r in pipeline.facts(turn).blocked if r.startswith("sensitive_"))
    return {
        "secrets_corpus": {"lines": len(rows), "blocked": len(blocked),
                           "block_rate": round(len(blocked) / max(len(rows), 1), 4),
                           "missed_by_kind": dict(missed_kinds)},
        "locomo_turns": {"turns": len(turns), "blocked_as_secret": len(false_positives),
                         "false_positive_rate": round(len(false_positives) / max(len(turns), 1), 5),
                         "facts_held_back_as_sensitive": dict(held_back)},
    }
