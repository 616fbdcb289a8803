"""Hybrid by design (docs/llm.md#hybrid): the rules are the floor and the model adds to them.

`LLM_MODE=hybrid` (the default) runs the rules on every turn the model sees and merges both
answers; `LLM_MODE=replace` lets the model's answer stand alone. Either way a failed call is
answered by the rules alone (`GuardedLLM`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from streams.write.trigger import TriggerDecision
from topics.candidates import Fact

_NOT_WORD = re.compile(r"[\W_]+")


def merged_trigger(rules: TriggerDecision, model: TriggerDecision) -> TriggerDecision:
    """Yes when either says yes: what the rules would store is never lost to a model's "no".

    Both yes: the model's type hint (the rules' when it gives none), both sets of tags, the
    higher confidence.
    """
    if not model.should_create:
        return rules
    if not rules.should_create:
        return model
    return TriggerDecision(True, model.type_hint or rules.type_hint,
                           tuple(dict.fromkeys((*rules.tags_hint, *model.tags_hint))),
                           max(rules.confidence, model.confidence), rules.command)


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
