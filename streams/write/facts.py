"""From a turn to the facts worth storing: trigger, extraction, then the safety policy."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from streams.write import policy, procedural
from streams.write.extraction import RulesExtractor
from streams.language.sensitive import sensitive_categories
from streams.settings import WriteSettings
from streams.write.trigger import CommandKind, ExplicitCommand, TriggerDecision, rules_trigger
from topics.candidates import Candidate, Fact
from topics.commands import Command
from topics.commands import CommandKind as WireKind
from topics.turns import Turn


class FactsLLM(Protocol):
    """The two questions `FactPipeline.afacts` asks a model, each always answered (by the rules
    when the model does not): `streams.guarded.llm.GuardedLLM`, which sits above the write rules
    it falls back to, and so is not imported here."""

    async def trigger(self, turn: Turn, context_turns: Sequence[Turn] = ()) -> TriggerDecision: ...

    async def extract(self, turn: Turn, context_turns: Sequence[Turn] = ()) -> list[Fact]: ...


@dataclass
class TurnFacts:
    """The facts to store, the trigger's confidence, why anything was dropped, and an explicit
    command that must be applied on the hot path (forget, "don't remember this")."""

    facts: list[Fact]
    confidence: float
    blocked: list[str] = field(default_factory=list)
    command: ExplicitCommand | None = None


def mentions_topic(text: str, topics: Iterable[str]) -> bool:
    """Whether `text` mentions any blocked topic (whole words, any case)."""
    return any(re.search(rf"\b{re.escape(t)}\b", text, re.I) for t in topics if t)


class FactPipeline:
    """Trigger → extractor → policy filter → type toggles (seed 004), for one turn at a time."""

    def __init__(self, write: WriteSettings, extractor: RulesExtractor | None = None) -> None:
        self.write = write
        self.extractor = extractor or RulesExtractor(
            max_facts=write.max_facts_per_turn, max_chars=write.summary_max_chars
        )
        self.sensitive = [c.strip() for c in write.sensitive_categories.split(",") if c.strip()]
        self.allowed_types = {"procedural"}
        if write.semantic_enabled:
            self.allowed_types.add("semantic")
        if write.episodic_enabled:
            self.allowed_types.add("episodic")

    def facts(self, turn: Turn, blocked_topics: Sequence[str] = ()) -> TurnFacts:
        """What to store from `turn`, by rules; facts about a blocked topic are dropped."""
        procedure = procedural.procedure_fact(turn, self.write.summary_max_chars)
        decision = procedural.decision_for(rules_trigger(turn), procedure)
        early = self._gate(turn, decision)
        if early is not None:
            return early
        facts = [procedure] if procedure is not None else self.extractor.extract(turn)
        return self._filter(decision, facts, blocked_topics)

    async def afacts(self, turn: Turn, blocked_topics: Sequence[str], llm: FactsLLM,
                     context: Sequence[Turn] = ()) -> TurnFacts:
        """The same, with the LLM trigger and classifier (each falls back to the rules)."""
        procedure = procedural.procedure_fact(turn, self.write.summary_max_chars)
        decision = procedural.decision_for(await llm.trigger(turn, context), procedure)
        early = self._gate(turn, decision)
        if early is not None:
            return early
        facts = [procedure] if procedure is not None else await llm.extract(turn, context)
        return self._filter(decision, facts, blocked_topics)

    def _gate(self, turn: Turn, decision: TriggerDecision) -> TurnFacts | None:
        """An early answer: a hot-path command, nothing worth storing, or a secret in the turn."""
        command = decision.command
        if command is not None and command.kind in (CommandKind.forget, CommandKind.dont_remember):
            return TurnFacts([], decision.confidence, command=command)
        if not decision.should_create or decision.confidence < self.write.trigger_confidence_min:
            return TurnFacts([], decision.confidence)
        storable, reason = policy.is_storable(turn.text)
        if not storable:
            # If unsure, don't store (seed 004 §2): a turn carrying a secret yields nothing.
            return TurnFacts([], decision.confidence, [reason or "secret"])
        return None

    def _filter(self, decision: TriggerDecision, facts: Sequence[Fact],
                blocked_topics: Sequence[str]) -> TurnFacts:
        """The policy over extracted facts: secrets, blocked topics, sensitive data, toggles."""
        command = decision.command
        # Sensitive facts are stored only when the user asked for it in so many words.
        explicit = command is not None and command.kind in (CommandKind.remember, CommandKind.pin)
        kept, blocked = [], []
        for fact in map(procedural.settle, facts):
            storable, reason = policy.is_storable(fact.summary)
            if not storable:
                blocked.append(reason or "secret")
            elif mentions_topic(fact.summary, blocked_topics):
                blocked.append("blocked_topic")
            elif not explicit and (kinds := sensitive_categories(fact.summary, self.sensitive)):
                blocked.append(f"sensitive_{kinds[0]}")
            elif fact.type in self.allowed_types:
                pinned = command is not None and command.kind == CommandKind.pin
                kept.append(fact.model_copy(update={"pinned": True}) if pinned else fact)
        return TurnFacts(kept, decision.confidence, blocked, command)


WIRE_KINDS: dict[CommandKind, WireKind] = {
    CommandKind.forget: "forget", CommandKind.dont_remember: "dont_remember", CommandKind.pin: "pin",
}
"""The `memory.commands` kind of each trigger kind said in chat that is one (`remember` is
not: its facts are stored)."""


def hot_command(turn: Turn, command: ExplicitCommand) -> Command:
    """The `memory.commands` record of a command said in a chat turn (forget, don't remember)."""
    return Command(
        command_id=f"{turn.ref}:{command.kind.value}", kind=WIRE_KINDS[command.kind],
        user_id=turn.user_id, ts=turn.ts, thread_id=turn.thread_id, turn_id=turn.turn_id,
        query=command.payload or None, actor=turn.actor_id or turn.speaker or "user",
    )


def candidates_of(turn: Turn, result: TurnFacts, episode: Fact | None = None,
                  episode_refs: Sequence[str] = (),
                  context: tuple[str, str | None] | None = None) -> list[Candidate]:
    """The turn's candidates: its facts, each with `context` (the texts of the turn and of the
    one before, `streams.write.contextual.context_of`), then the episode it closes
    (provenance: the window; no context)."""
    facts = [*result.facts, *([episode] if episode is not None else [])]
    turn_text, previous = context or (None, None)
    return [
        Candidate(turn=turn, fact=fact, fact_index=i, fact_count=len(facts),
                  confidence=result.confidence,
                  source_refs=list(episode_refs) if fact is episode else [],
                  context_turn=None if fact is episode else turn_text,
                  context_previous=None if fact is episode else previous)
        for i, fact in enumerate(facts)
    ]
