"""Ingest's candidates embedded while the rest of their batch is still being decided.

Ingest decides each turn of a batch on the event loop (trigger, extraction, policy), then needs
its candidates' vectors (`streams.write.contextual.fact_vectors`) before it sends anything. The
model runs on threads of its own. Embedding the whole batch only once every turn is decided
left those threads idle while the loop decided, and the loop idle (unless dedup had work) while
they embedded. Here the first turn with candidates starts a model call at once, and each time
a call ends, the turns decided meanwhile start the next: the loop decides while the model
embeds.

The vectors are the same as one call for the batch would give: each call embeds its distinct
texts, and a turn text embedded by an earlier call of the batch is taken from `TurnVectors`
(a call starts only once the one before has ended and filled it), so no text is embedded twice
and `local-int8`, one text a run, gives every text the vector it gives alone. On a failure the
candidates of that call go without vectors (dedup embeds their summaries; they are then
searched without context), as before.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from streams.memory.vector_index import encode_context_vector, encode_vector
from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.providers.embedders import Embed
from streams.write.contextual import FactTexts, TurnVectors, fact_vectors
from topics.candidates import Candidate

log = logging.getLogger(__name__)
Vectors = list[tuple[np.ndarray, np.ndarray | None]]


class TurnPlan(Protocol):
    """What ingest decided for a turn (`streams.pipeline.ingest.TurnPlan`), as embedded here."""

    candidates: list[Candidate]

    def fact_texts(self) -> list[FactTexts]: ...


@dataclass
class _Call:
    plans: list[TurnPlan]
    vectors: asyncio.Future[Vectors | None]


class EmbeddingAhead:
    """The model calls of one ingest batch (module doc): `add` each plan as it is decided,
    then `finish` gives every candidate its vectors."""

    def __init__(self, embed: Embed, known: TurnVectors, stage: str) -> None:
        self.embed = embed
        self.known = known
        self.stage = stage
        self._waiting: list[TurnPlan] = []
        self._calls: list[_Call] = []

    def add(self, plan: TurnPlan) -> None:
        """Queue a decided plan's candidates; start a model call when none is running."""
        if plan.candidates:
            self._waiting.append(plan)
        if self._waiting and (not self._calls or self._calls[-1].vectors.done()):
            self._start()

    async def finish(self) -> None:
        """Embed what is still queued, wait for every call and give the candidates their
        summary's embedding (`Candidate.vector_b64`) and context vector (`context_b64`)."""
        if self._waiting:
            if self._calls:  # its turn texts in `known` first: none embedded twice
                await asyncio.wait([self._calls[-1].vectors])
            self._start()
        for call in self._calls:
            vectors = await call.vectors
            if vectors is None:
                continue
            pairs = iter(vectors)
            for plan in call.plans:
                plan.candidates = [c.model_copy(update={
                    "vector_b64": encode_vector(summary),
                    "context_b64": None if context is None else encode_context_vector(context)})
                    for c, (summary, context) in zip(plan.candidates, pairs)]

    def cancel(self) -> None:
        """Cancel the calls still running (the batch was cut short)."""
        for call in self._calls:
            call.vectors.cancel()

    def _start(self) -> None:
        plans, self._waiting = self._waiting, []
        self._calls.append(_Call(plans, asyncio.ensure_future(self._vectors(plans))))

    async def _vectors(self, plans: list[TurnPlan]) -> Vectors | None:
        try:
            return await fact_vectors([t for plan in plans for t in plan.fact_texts()],
                                      self.embed, self.known)
        except Exception as exc:  # noqa: BLE001 - dedup embeds what ingest could not
            metrics.STAGE_ERRORS.labels(stage=self.stage, error=type(exc).__name__).inc()
            log.warning("ingest could not embed candidates, dedup will: %s", describe_failure(exc))
            return None
