"""Hybrid by design (docs/llm.md#hybrid): the rules are the floor and the model adds to them.

`LLM_MODE=hybrid` (the default): the trigger asks the model only about the turns the rules would
not keep (its "yes" adds a candidate; a "no" could not undo the rules' "yes", so it is not asked,
which saves a call on most turns), and extraction merges both fact sets (`merged_facts`).
`LLM_MODE=replace` lets the model's answers stand alone. Either way a failed call is answered by
the rules alone (`GuardedLLM`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from topics.candidates import Fact

_NOT_WORD = re.compile(r"[\W_]+")


def _key(summary: str) -> str:
    """A summary compared without case, spacing or punctuation."""
    return _NOT_WORD.sub(" ", summary.lower()).strip()


def merged_facts(rules: Sequence[Fact], model: Sequence[Fact]) -> list[Fact]:
    """The rules' facts, then the model's that say something else.

    A model fact is a duplicate when its summary matches a rules fact's (case, spacing and
    punctuation aside) or it sets the same `entity_key`; paraphrases are the dedup stage's to
    merge, as for two turns saying one thing. Each side is already capped at
    `MAX_FACTS_PER_TURN`, so a turn yields at most twice that.
    """
    summaries = {_key(fact.summary) for fact in rules}
    keys = {fact.entity_key for fact in rules if fact.entity_key}
    merged = list(rules)
    for fact in model:
        if _key(fact.summary) in summaries or (fact.entity_key and fact.entity_key in keys):
            continue
        summaries.add(_key(fact.summary))
        if fact.entity_key:
            keys.add(fact.entity_key)
        merged.append(fact)
    return merged
