"""From a turn to the facts worth storing: trigger, extraction, then the safety policy."""
from __future__ import annotations

from dataclasses import dataclass, field

from streams import policy
from streams.extraction import RulesExtractor
from streams.settings import Settings
from streams.trigger import rules_trigger
from topics.candidates import Fact
from topics.turns import Turn


@dataclass
class TurnFacts:
    """The facts to store, the trigger's confidence, and why anything was dropped."""

    facts: list[Fact]
    confidence: float
    blocked: list[str] = field(default_factory=list)


class FactPipeline:
    """Trigger → extractor → policy filter → type toggles (seed 004), for one turn at a time."""

    def __init__(self, settings: Settings, extractor: RulesExtractor | None = None) -> None:
        self.settings = settings
        self.extractor = extractor or RulesExtractor(
            max_facts=settings.max_facts_per_turn, max_chars=settings.summary_max_chars
        )
        self.allowed_types = {"procedural"}
        if settings.semantic_enabled:
            self.allowed_types.add("semantic")
        if settings.episodic_enabled:
            self.allowed_types.add("episodic")

    def facts(self, turn: Turn) -> TurnFacts:
        decision = rules_trigger(turn)
        if not decision.should_create or decision.confidence < self.settings.trigger_confidence_min:
            return TurnFacts([], decision.confidence)
        storable, reason = policy.is_storable(turn.text)
        if not storable:
            # If unsure, don't store (seed 004 §2): a turn carrying a secret yields nothing.
            return TurnFacts([], decision.confidence, [reason or "secret"])
        kept, blocked = [], []
        for fact in self.extractor.extract(turn):
            storable, reason = policy.is_storable(fact.summary)
            if not storable:
                blocked.append(reason or "secret")
            elif fact.type in self.allowed_types:
                kept.append(fact)
        return TurnFacts(kept, decision.confidence, blocked)
