"""`GuardedLLM`: the three LLM questions of the pipeline, each always answered.

In the default `LLM_MODE=hybrid` the model adds to the rules: the trigger asks it only about turns
the rules would not keep, and the classifier's facts join the rules' (`streams.write.hybrid`);
the same-fact check is the model's alone when it answers.

Every call runs under a hard time budget; a timeout, an error (429, 5xx, connection) or an answer
that fails its schema falls back to the rules (`rules_trigger`, `RulesExtractor`,
`same_fact_heuristic`), counted in `memstream_llm_fallbacks_total{provider,task,reason}`. With no
provider configured the rules answer directly and nothing is counted.

The trigger and the classifier are asked about several turns at once where the caller has them
(`trigger_many`, `extract_many`: ingest's batch): the turns of one user and thread go in one call,
`LLM_BATCH_TURNS` at most, so that the instructions and the context are paid for once per call,
not once per turn. Each turn keeps its own answer; a turn the answer misses (or answers invalidly)
is the rules', counted as a fallback of its own, and a failed call counts one fallback per turn.
A call never mixes two users' turns.

The budget is kept by a `Deadline`, `asyncio.wait_for` unless another is given: tests pass one
whose budget runs out when they say so, never because the machine is slow.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias, TypeVar

from pydantic import BaseModel

from streams.write.hybrid import merged_facts
from streams.memory.dedup import same_fact_heuristic
from streams.language.captions import split_image_caption
from streams.language.dates import resolve_dates
from streams.write.extraction import RulesExtractor, annotations, fit
from streams.write.policy import find_secrets
from streams.providers.llm.base import LLMProvider, Task
from streams.providers.llm.errors import LLMError, LLMInvalidOutput, LLMTimeout
from streams.providers.llm.factory import create_provider, defers_extraction
from streams.providers.llm.inputs import same_fact_input, turn_day, turns_input
from streams.providers.llm.metrics import LLM_CALLS, LLM_FALLBACKS, LLM_SECONDS, LLM_TURNS
from streams.providers.llm.parsing import parse_items, parse_output
from streams.providers.llm.prompts import system_prompt
from streams.providers.llm.schemas import (
    MAX_BATCH_TURNS,
    ExtractionItem,
    ExtractionOutput,
    QueryPartsOutput,
    SameFactOutput,
    TriggerItem,
    TriggerOutput,
)
from streams.settings import Settings
from streams.write.trigger import TriggerDecision, parse_command, rules_trigger
from topics.candidates import Fact
from topics.turns import Role, Turn

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
A = TypeVar("A", bound=BaseModel)
R = TypeVar("R")

Asked: TypeAlias = tuple[Turn, Sequence[Turn]]
"""A turn the trigger or the classifier is asked about, with its thread's recent buffer
(oldest first; the turn itself may be in it)."""

Deadline: TypeAlias = Callable[[Awaitable[str], float], Awaitable[str]]
"""`deadline(call, budget_s)`: the answer of the provider call `call`, or `TimeoutError` once
`budget_s` seconds have run out (the call is then cancelled), as `asyncio.wait_for` does."""


def rules_only(turn: Turn) -> bool:
    """Turns the LLM is never asked about.

    Tool and system turns (the rules skip them); explicit commands, which the hot path applies
    deterministically ("don't remember this" must never be stored because a model thought
    otherwise); and turns carrying a secret, which must not leave the worker.
    """
    if turn.role not in (Role.user, Role.assistant) or not turn.text.strip():
        return True
    if turn.role == Role.user and parse_command(split_image_caption(turn.text)[0]):
        return True
    return bool(find_secrets(turn.text))


@dataclass(frozen=True)
class _Failed:
    """A call that gave no usable answer, and why (the fallback counter's reason)."""

    reason: str


def _decision(out: TriggerOutput) -> TriggerDecision:
    """The model's trigger answer as the pipeline's `TriggerDecision`."""
    if not out.should_create:
        return TriggerDecision(False, None, (), round(out.confidence, 3))
    return TriggerDecision(True, out.type_hint, tuple(dict.fromkeys(out.tags_hint)),
                           round(out.confidence, 3))


class GuardedLLM:
    """Trigger, classifier and same-fact check over an optional `LLMProvider`, with rules behind.

    `context_turns` is the thread's recent buffer, oldest first (the turn itself may be in it).
    `deadline` holds each provider call to its task's budget (see `Deadline`).
    """

    def __init__(self, provider: LLMProvider | None, settings: Settings, *,
                 extractor: RulesExtractor | None = None,
                 deadline: Deadline = asyncio.wait_for) -> None:
        self.provider = provider
        self.settings = settings
        self.deadline = deadline
        self.extractor = extractor or RulesExtractor(
            max_facts=settings.write.max_facts_per_turn, max_chars=settings.write.summary_max_chars
        )
        self.budgets_s = {
            Task.trigger: settings.write.trigger_budget_ms / 1000,
            Task.extract: settings.llm.llm_extract_budget_ms / 1000,
            Task.same_fact: settings.llm.llm_same_fact_budget_ms / 1000,
            Task.consolidate: settings.llm.llm_lifecycle_budget_ms / 1000,
            Task.insight: settings.llm.llm_lifecycle_budget_ms / 1000,
            Task.query_parts: settings.llm.llm_query_budget_ms / 1000,
        }
        self._slots: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> GuardedLLM:
        """The facade over `create_provider(settings)`."""
        return cls(create_provider(settings), settings)

    @property
    def hybrid(self) -> bool:
        """Whether the model's answers add to the rules' (`LLM_MODE=hybrid`) or replace them."""
        return self.settings.llm.llm_mode == "hybrid"

    @property
    def defers_extraction(self) -> bool:
        """Whether ingest keeps to the rules and the enrich stage asks the model later
        (`LLM_EXTRACTION=deferred`, hybrid only: replace mode needs the model's answer first);
        decided from the settings, as the worker decides whether to run that stage."""
        return self.provider is not None and defers_extraction(self.settings)

    async def model_facts_many(self, items: Sequence[Asked]) -> list[list[Fact] | None]:
        """The model's own facts of each `(turn, context)` of `items`, in order, a thread's
        turns in one call (see `trigger_many`): None where it was not asked (a turn the rules
        alone answer, no provider) or its answer fell back (counted). No rules are merged in:
        the caller knows what the rules already stored."""
        asked = [] if self.provider is None else [
            i for i, (turn, _) in enumerate(items) if not rules_only(turn)]
        answers = await self._ask_turns(Task.extract, items, asked, ExtractionItem, self._facts)
        return [answers.get(i) for i in range(len(items))]

    async def trigger(self, turn: Turn, context_turns: Sequence[Turn] = ()) -> TriggerDecision:
        """Should `turn` become a memory candidate? (hot path: 250 ms budget, no retries)."""
        return (await self.trigger_many([(turn, context_turns)]))[0]

    async def trigger_many(self, items: Sequence[Asked]) -> list[TriggerDecision]:
        """`trigger` for each `(turn, context)` of `items`, in order: the turns of one thread
        are asked in one call, `LLM_BATCH_TURNS` at most (`_ask_turns`)."""
        decisions = [rules_trigger(turn) for turn, _ in items]
        if self.provider is None:
            return decisions
        # hybrid: a model's "no" could not undo the rules' "yes", so it is not asked
        asked = [i for i, (turn, _) in enumerate(items)
                 if not rules_only(turn) and not (self.hybrid and decisions[i].should_create)]
        answers = await self._ask_turns(Task.trigger, items, asked, TriggerItem,
                                        lambda out, _turn: _decision(out))
        for i, decision in answers.items():
            decisions[i] = decision
        return decisions

    async def extract(self, turn: Turn, context_turns: Sequence[Turn] = ()) -> list[Fact]:
        """Up to `max_facts_per_turn` facts of `turn` (empty: skip). The safety policy is the
        caller's, as for the rules extractor."""
        return (await self.extract_many([(turn, context_turns)]))[0]

    async def extract_many(self, items: Sequence[Asked]) -> list[list[Fact]]:
        """`extract` for each `(turn, context)` of `items`, in order, the turns of one thread in
        one call (see `trigger_many`); a turn the call did not answer is the rules'."""
        out: list[list[Fact]] = []
        for (turn, _), answer in zip(items, await self.model_facts_many(items)):
            if answer is None:
                out.append(self.extractor.extract(turn))
            elif self.hybrid:
                out.append(merged_facts(self.extractor.extract(turn), answer))
            else:
                out.append(answer)
        return out

    async def same_fact(self, a: str, b: str, *, a_entities: Sequence[str] = (),
                        b_entities: Sequence[str] = ()) -> bool:
        """Do summaries `a` and `b` state the same fact? (dedup's check band)."""
        def rules() -> bool:
            if not self.settings.dedup.memory_enable_entity_heuristics:
                return False  # no check available: keep both (create), never merge blindly
            return same_fact_heuristic(a, a_entities, b, b_entities)

        if self.provider is None:
            return rules()
        same = await self._ask(Task.same_fact, same_fact_input(a, b), SameFactOutput,
                               lambda out: out.same_fact)
        return rules() if same is None else same

    @property
    def configured(self) -> bool:
        """Whether a provider is configured (otherwise every question is answered by rules)."""
        return self.provider is not None

    async def ask(self, task: Task, user: str, schema: type[M]) -> M | None:
        """The provider's answer to a background task (`Task.consolidate`, `Task.insight`),
        validated as `schema`; None when no provider is configured or it failed (timeout, error,
        invalid answer: counted as a fallback), so the caller uses its rules or does nothing."""
        if self.provider is None:
            return None
        return await self._ask(task, user, schema, lambda out: out)

    async def query_parts(self, question: str) -> list[str] | None:
        """The searches the model says `question` needs, one per fact its answer takes
        (`Task.query_parts`, within LLM_QUERY_BUDGET_MS); None when no provider is configured
        or it failed (counted as a fallback): the rules split the question then."""
        if self.provider is None:
            return None
        return await self._ask(Task.query_parts, json.dumps({"question": question}),
                               QueryPartsOutput, lambda out: list(out.parts))

    async def aclose(self) -> None:
        if self.provider is not None:
            await self.provider.aclose()

    def _facts(self, out: ExtractionOutput, turn: Turn) -> list[Fact]:
        """Validated classifier output as facts: dates resolved against the turn, summaries
        tidied to the length limit; a summary that does not name the speaker is invalid."""
        if out.decision == "skip":
            return []
        name, day = turn.speaker_name, turn_day(turn)
        facts: list[Fact] = []
        seen: set[str] = set()
        for item in out.facts[: self.settings.write.max_facts_per_turn]:
            summary = fit(resolve_dates(item.summary, day), self.extractor.max_chars)
            if name.lower() not in summary.lower():
                raise LLMInvalidOutput("summary does not name the speaker")
            if summary.lower() in seen:
                continue
            seen.add(summary.lower())
            facts.append(Fact(
                type=item.type or out.decision, summary=summary, category=item.category,
                importance=item.importance, tags=list(dict.fromkeys(item.tags)),
                entities=list(dict.fromkeys(item.entities)), entity_key=item.entity_key,
                **annotations(summary, day),
            ))
        return facts

    def _prompt(self, task: Task) -> str:
        """`task`'s system prompt, without the answer's shape where the request carries the
        schema (`streams.providers.llm.prompts`)."""
        return system_prompt(task, shape=not getattr(self.provider, "sends_schema", False))

    async def _ask(self, task: Task, user: str, schema: type[M], convert: Callable[[M], R]) -> R | None:
        """The provider's answer to `task`, validated and converted; None means "use the rules"
        (and the fallback is counted with its reason)."""
        answer = await self._call(task, user, lambda text: convert(parse_output(text, schema)), 1)
        return None if isinstance(answer, _Failed) else answer

    async def _ask_turns(self, task: Task, items: Sequence[Asked], asked: Sequence[int],
                         item: type[A], convert: Callable[[A, Turn], R]) -> dict[int, R]:
        """The model's answers about the turns `items[i]` for `i` in `asked`, by `i`: the turns
        of one user and thread go in one call, `LLM_BATCH_TURNS` at most, the calls of several
        threads at once, each under its task's budget. A turn missing from an answer, or whose
        item fails validation, is left out (the caller answers it by the rules) and counted as a
        fallback of its own; a call that fails leaves out all its turns, each counted."""
        answers = await asyncio.gather(*(self._ask_group(task, items, group, item, convert)
                                         for group in self._groups(items, asked)))
        return {i: result for answered in answers for i, result in answered.items()}

    def _groups(self, items: Sequence[Asked], asked: Sequence[int]) -> list[list[int]]:
        """`asked` in calls: by user and thread in the order asked, `LLM_BATCH_TURNS` each."""
        size = min(self.settings.llm.llm_batch_turns, MAX_BATCH_TURNS)
        threads: dict[tuple[str, str], list[int]] = {}
        for i in asked:
            turn = items[i][0]
            threads.setdefault((turn.user_id, turn.thread_id), []).append(i)
        return [group[at:at + size] for group in threads.values() for at in range(0, len(group), size)]

    async def _ask_group(self, task: Task, items: Sequence[Asked], group: list[int],
                         item: type[A], convert: Callable[[A, Turn], R]) -> dict[int, R]:
        """One call about the turns `group` of `items` (see `_ask_turns`)."""
        provider = self.provider
        assert provider is not None
        batch = [items[i] for i in group]
        answer = await self._call(task, turns_input(task, batch),
                                  lambda text: parse_items(text, item, len(group)), len(group))
        if isinstance(answer, _Failed):
            LLM_TURNS.labels(provider.name, task.value, "fallback").inc(len(group))
            return {}
        results: dict[int, R] = {}
        for n, i in enumerate(group, 1):
            out = answer.get(n)
            if out is None:
                continue
            try:
                results[i] = convert(out, items[i][0])
            except LLMInvalidOutput:
                continue
        if missing := len(group) - len(results):
            LLM_FALLBACKS.labels(provider.name, task.value, LLMInvalidOutput.reason).inc(missing)
            LLM_TURNS.labels(provider.name, task.value, "fallback").inc(missing)
            log.debug("LLM %s %s answered %d of %d turns; rules for the others", provider.name,
                      task.value, len(results), len(group))
        LLM_TURNS.labels(provider.name, task.value, "ok").inc(len(results))
        return results

    async def _call(self, task: Task, user: str, parse: Callable[[str], R], turns: int) -> R | _Failed:
        """One provider call under `task`'s budget, its answer parsed by `parse` (raising
        `LLMError` for a bad one); `_Failed` with the reason when it gives none, counted as the
        fallback of each of the `turns` it was about. It waits for a slot first
        (`LLM_MAX_CONCURRENT_CALLS`), outside its budget."""
        async with self._slot():
            return await self._call_now(task, user, parse, turns)

    def _slot(self) -> asyncio.Semaphore:
        """One of `LLM_MAX_CONCURRENT_CALLS` slots of the running loop (a semaphore belongs to
        one loop; the benches and the tests run several, one after another)."""
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            self._slots = {loop: (slots := asyncio.Semaphore(self.settings.llm.llm_max_concurrent_calls))}
        return slots

    async def _call_now(self, task: Task, user: str, parse: Callable[[str], R], turns: int) -> R | _Failed:
        provider = self.provider
        assert provider is not None
        budget = self.budgets_s[task]
        started = time.perf_counter()
        outcome = "fallback"
        try:
            text = await self.deadline(
                provider.complete(task, self._prompt(task), user, timeout_s=budget, turns=turns),
                budget,
            )
            result = parse(text)
        except TimeoutError:  # our budget (the deadline)
            reason = LLMTimeout.reason
        except LLMError as exc:
            reason = exc.reason
        except Exception as exc:  # noqa: BLE001 - a provider bug must not stall the stream either
            log.warning("LLM %s %s failed unexpectedly (%s); using rules",
                        provider.name, task.value, type(exc).__name__)
            reason = LLMError.reason
        else:
            outcome = "ok"
            LLM_CALLS.labels(provider.name, task.value, outcome).inc()
            return result
        finally:
            LLM_SECONDS.labels(provider.name, task.value, outcome).observe(time.perf_counter() - started)
        LLM_CALLS.labels(provider.name, task.value, "fallback").inc()
        LLM_FALLBACKS.labels(provider.name, task.value, reason).inc(turns)
        log.debug("LLM %s %s fell back to rules: %s", provider.name, task.value, reason)
        return _Failed(reason)
