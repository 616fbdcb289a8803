"""The parts of a question that combines facts, from the model when one is configured (issue 53).

The rules split a combining question at its words ("Ana adopt the dog" / "her new job",
`streams.read.evidence.parts`), which finds a part's evidence only when the memory shares the
part's words; "what activities does Melanie partake in" has no part to split at all. A model
names the searches an answer needs ("Melanie paints", "Melanie goes camping", "Melanie signed
up for a class"), each then searched as a rule's part is (`streams.read.evidence.gather`). One
call per question, only for a question `combining_kind` calls combining, within its budget
(LLM_QUERY_BUDGET_MS); its answer is kept for the same question next time (`CACHE_SIZE`), and
when there is no model, it fails or answers one search, the rules' parts stand.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace

from streams.memory.lexical_index import tokenize_text
from streams.read.query import QueryPlan

PartsModel = Callable[[str], Awaitable[list[str] | None]]
"""`model(question)`: the searches the model says the question needs, or None (no model, or it
failed): `streams.guarded.llm.GuardedLLM.query_parts`."""

CACHE_SIZE = 1024
"""Questions whose model parts are kept (least recently asked dropped first)."""


class ModelParts:
    """Plans with the model's parts for combining questions, its answers kept per question."""

    def __init__(self, model: PartsModel | None, cache_size: int = CACHE_SIZE) -> None:
        """`model` None: the rules' parts always (no model configured, or QUERY_MODEL_PARTS off)."""
        self.model = model
        self.cache_size = cache_size
        self._known: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    async def planned(self, plan: QueryPlan) -> QueryPlan:
        """`plan` with the model's parts when it is a combining question and the model named
        two searches or more that each share a word with the question (a name, the thing
        asked about: a search of nothing the question says is the model's invention, as a
        small model that copies its prompt's example names writes); else `plan`."""
        if self.model is None or plan.combining is None:
            return plan
        parts = self._known.get(plan.text)
        if parts is None:
            answered = await self.model(plan.text)
            if answered is None:
                return plan
            asked = set(tokenize_text(plan.text))
            parts = tuple(dict.fromkeys(p for p in answered if asked & set(tokenize_text(p))))
            self._known[plan.text] = parts
            if len(self._known) > self.cache_size:
                self._known.popitem(last=False)
        else:
            self._known.move_to_end(plan.text)
        return replace(plan, parts=parts) if len(parts) > 1 else plan
