"""From a turn to the facts worth storing: trigger, extraction, then the write policy
(`streams.write.write_policy`, the one every path that writes a memory calls)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from streams.write.hybrid import merged_facts
from streams.write import procedural
from streams.write.extraction import RulesExtractor
from streams.settings import WriteSettings
from streams.write.trigger import CommandKind, ExplicitCommand, TriggerDecision, rules_trigger
from streams.write.write_policy import WritePolicy, mentions_topic
from topics.candidates import Candidate, Fact
from topics.commands import Command
from topics.commands import CommandKind as WireKind
from topics.turns import Turn


class FactsLLM(Protocol):
    """The two questions `FactPipeline.afacts` asks a model, each always answered (by the rules
    when the model does not): `streams.guarded.llm.GuardedLLM`, which sits above the write rules
    it falls back to, and so is not imported here."""

    async def trigger_many(self, items: Sequence[tuple[Turn, Sequence[Turn]]]) -> list[TriggerDecision]: ...

    async def extract_many(self, items: Sequence[tuple[Turn, Sequence[Turn]]]) -> list[list[Fact]]: ...


class ModelFacts(Protocol):
    """What `FactPipeline.added_by_model` asks: `GuardedLLM.model_facts_many`."""

    async def model_facts_many(self, items: Sequence[tuple[Turn, Sequence[Turn]]]) -> list[list[Fact] | None]: ...


HOT_KINDS = (CommandKind.forget, CommandKind.dont_remember)
"""Commands said in chat that are applied on the hot path: their turn stores nothing."""


@dataclass(frozen=True)
class Asked:
    """One turn of `FactPipeline.afacts_many`: the user's blocked topics and the thread's recent
    turns it is checked and understood with."""

    turn: Turn
    blocked_topics: Sequence[str] = ()
    context: Sequence[Turn] = ()


@dataclass
class TurnFacts:
    """The facts to store, the trigger's confidence, why anything was dropped, and an explicit
    command that must be applied on the hot path (forget, "don't remember this")."""

    facts: list[Fact]
    confidence: float
    blocked: list[str] = field(default_factory=list)
    command: ExplicitCommand | None = None


__all__ = ["Asked", "FactPipeline", "ModelFacts", "TurnFacts", "candidates_of", "hot_command", "mentions_topic"]


class FactPipeline:
    """Trigger → extractor → policy filter → type toggles (seed 004), for one turn at a time."""

    def __init__(self, write: WriteSettings, extractor: RulesExtractor | None = None) -> None:
        self.write = write
        self.extractor = extractor or RulesExtractor(
            max_facts=write.max_facts_per_turn, max_chars=write.summary_max_chars
        )
        self.policy = WritePolicy.of(write)
        self.allowed_types = {"procedural"}
        if write.semantic_enabled:
            self.allowed_types.add("semantic")
        if write.episodic_enabled:
            self.allowed_types.add("episodic")

    def facts(self, turn: Turn, blocked_topics: Sequence[str] = (),
              context: Sequence[Turn] = ()) -> TurnFacts:
        """What to store from `turn`, by rules; facts about a blocked topic are dropped, and
        facts naming what the policy refused in the turn or in its thread's recent `context`."""
        procedure = procedural.procedure_fact(turn, self.write.summary_max_chars)
        decision = procedural.decision_for(rules_trigger(turn), procedure)
        early = self._gate(turn, decision)
        if early is not None:
            return early
        facts = [procedure] if procedure is not None else self.extractor.extract(turn)
        return self._filter(turn, decision, facts, blocked_topics, context)

    async def afacts(self, turn: Turn, blocked_topics: Sequence[str], llm: FactsLLM,
                     context: Sequence[Turn] = ()) -> TurnFacts:
        """The same, with the LLM trigger and classifier (each falls back to the rules)."""
        return (await self.afacts_many([Asked(turn, blocked_topics, context)], llm))[0]

    async def afacts_many(self, asked: Sequence[Asked], llm: FactsLLM) -> list[TurnFacts]:
        """`afacts` for several turns, in order: one trigger question for them all, then one
        extraction question for those that pass the gate, which the model answers a thread's
        turns at a time (`GuardedLLM.trigger_many`, `extract_many`)."""
        procedures = [procedural.procedure_fact(a.turn, self.write.summary_max_chars) for a in asked]
        triggered = await llm.trigger_many([(a.turn, a.context) for a in asked])
        decisions = [procedural.decision_for(d, p) for d, p in zip(triggered, procedures)]
        results: list[TurnFacts | None] = [self._gate(a.turn, d) for a, d in zip(asked, decisions)]
        extract = [i for i, r in enumerate(results) if r is None and procedures[i] is None]
        extracted = dict(zip(extract, await llm.extract_many(
            [(asked[i].turn, asked[i].context) for i in extract]))) if extract else {}
        out: list[TurnFacts] = []
        for i, (a, decision) in enumerate(zip(asked, decisions)):
            result = results[i]
            if result is None:
                procedure = procedures[i]
                facts = [procedure] if procedure is not None else extracted[i]
                result = self._filter(a.turn, decision, facts, a.blocked_topics, a.context)
            out.append(result)
        return out

    async def added_by_model(self, asked: Sequence[Asked], llm: ModelFacts) -> list[TurnFacts]:
        """Deferred hybrid extraction (`streams.pipeline.enrich`): for each turn, what the model
        says that the rules did not, through the same policy. Ingest already stored the rules'
        facts of these turns; the model is asked about every turn the rules would have kept
        and every one they would not (its "skip" is the trigger), never about a turn that is a
        command to forget, a procedure the rules keep whole, or one that carries a secret."""
        decisions, ask = [], []
        for i, a in enumerate(asked):
            procedure = procedural.procedure_fact(a.turn, self.write.summary_max_chars)
            decision = procedural.decision_for(rules_trigger(a.turn), procedure)
            decisions.append(decision)
            command = decision.command
            if procedure is not None or (command is not None and command.kind in HOT_KINDS):
                continue
            if self.policy.refusal(a.turn.text, consented=True) is None:
                ask.append(i)
        answers = await llm.model_facts_many([(asked[i].turn, asked[i].context) for i in ask]) if ask else []
        out = [TurnFacts([], d.confidence) for d in decisions]
        for i, answer in zip(ask, answers):
            if not answer:
                continue
            a, decision = asked[i], decisions[i]
            rules = self.extractor.extract(a.turn) if self._keeps(decision) else []
            added = merged_facts(rules, answer)[len(rules):]
            out[i] = self._filter(a.turn, decision, added, a.blocked_topics, a.context)
        return out

    def _keeps(self, decision: TriggerDecision) -> bool:
        """Whether the trigger's decision keeps the turn (yes, confidently enough)."""
        return decision.should_create and decision.confidence >= self.write.trigger_confidence_min

    def _gate(self, turn: Turn, decision: TriggerDecision) -> TurnFacts | None:
        """An early answer: a hot-path command, nothing worth storing, or a secret in the turn."""
        command = decision.command
        if command is not None and command.kind in HOT_KINDS:
            return TurnFacts([], decision.confidence, command=command)
        if not self._keeps(decision):
            return TurnFacts([], decision.confidence)
        secret = self.policy.refusal(turn.text, consented=True)
        if secret is not None:
            # If unsure, don't store (seed 004 §2): a turn carrying a secret yields nothing.
            return TurnFacts([], decision.confidence, [secret])
        return None

    def _filter(self, turn: Turn, decision: TriggerDecision, facts: Sequence[Fact],
                blocked_topics: Sequence[str], context: Sequence[Turn] = ()) -> TurnFacts:
        """The write policy over extracted facts (secrets, blocked topics, sensitive data), then
        the type toggles. A fact that names what a refused statement rests on, in this turn or
        in the thread's recent turns ("I was diagnosed with Lupus." … "Lupus keeps Dora home
        today."), is refused with it: a fact is checked with the conversation it came from."""
        command = decision.command
        # Sensitive facts are stored only when the user asked for it in so many words.
        explicit = command is not None and command.kind in (CommandKind.remember, CommandKind.pin)
        tainted: dict[str, str] = {}
        if not explicit:
            for said in (*context, turn):
                tainted.update(self.policy.refused_terms(said.text))
        kept, blocked = [], []
        for fact in map(procedural.settle, facts):
            reason = self.policy.refusal(fact.summary, blocked_topics, consented=explicit)
            if reason is None and tainted:
                reason = next((why for term, why in tainted.items()
                               if mentions_topic(fact.summary, (term,))), None)
            if reason is not None:
                blocked.append(reason)
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
                  context: tuple[str, str | None] | None = None,
                  first_index: int = 0) -> list[Candidate]:
    """The turn's candidates: its facts, each with `context` (the texts of the turn and of the
    one before, `streams.write.contextual.context_of`), then the episode it closes
    (provenance: the window; no context). Indexes count from `first_index`
    (`topics.candidates.MODEL_FACT_INDEX` for the facts the model adds later)."""
    facts = [*result.facts, *([episode] if episode is not None else [])]
    turn_text, previous = context or (None, None)
    return [
        Candidate(turn=turn, fact=fact, fact_index=first_index + i, fact_count=len(facts),
                  confidence=result.confidence,
                  source_refs=list(episode_refs) if fact is episode else [],
                  context_turn=None if fact is episode else turn_text,
                  context_previous=None if fact is episode else previous)
        for i, fact in enumerate(facts)
    ]
