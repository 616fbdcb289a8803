"""Stage 2 — dedup/merge: `memory.candidates` → embed, search the user's own memories, create,
update or supersede → `memory.events`.

State: the memory tables and the vector index (`streams.memory.store.MemoryStore`). Outputs:
`memory.events` (created/updated/superseded), `memory.progress`, `memory.candidates.dlq`.

Idempotency: a candidate's id is deterministic (user, source turn, fact index). The `applied`
table remembers what each candidate did and the events it produced, so a replayed candidate
(after a crash or a re-sent turn) changes nothing and re-sends the identical events.

Run by `agents/dedup.py` in the worker and by `streams.pipeline.inprocess` without Kafka.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from streams.memory.store import MemoryStore
from streams.observability import metrics
from streams.pipeline.outputs import Outputs
from streams.pipeline.records import Record
from streams.providers.llm import GuardedLLM
from topics.candidates import Candidate
from topics.progress import TurnProgress

log = logging.getLogger(__name__)
STAGE = "dedup"

Embed = Callable[[Sequence[str]], Awaitable[np.ndarray]]
"""Embed texts (one L2-normalised row per text)."""
RecordScope = Callable[[Record], AbstractContextManager[object]]
"""The scope a record is processed in (the worker's: its Faust event is the current one)."""


def no_scope(record: Record) -> AbstractContextManager[object]:
    return nullcontext()


class DedupStage:
    """Candidates in, memory events out."""

    def __init__(self, store: MemoryStore, embed: Embed, llm: GuardedLLM, outputs: Outputs,
                 record_scope: RecordScope = no_scope) -> None:
        self.store = store
        self.embed = embed
        self.llm = llm
        self.outputs = outputs
        self.record_scope = record_scope

    async def handle_batch(self, records: Sequence[Record]) -> list[str]:
        """Process candidate records in order, embedding all new summaries in one model call.

        Failures go to `memory.candidates.dlq`; the partition never blocks.
        """
        started = time.perf_counter()
        metrics.STAGE_RECORDS.labels(stage=STAGE).inc(len(records))
        parsed = [(record, parse_candidate(record)) for record in records]
        current = self.store.state()
        fresh = [c for _, c in parsed if c is not None and not current.is_applied(c)]
        vectors = (dict(zip(map(id, fresh), await self.embed([c.fact.summary for c in fresh])))
                   if fresh else {})
        outcomes = []
        for record, candidate in parsed:
            with self.record_scope(record):
                outcomes.append(await self._handle_one(record, candidate, vectors.get(id(candidate))))
        metrics.STAGE_SECONDS.labels(stage=STAGE).observe(
            (time.perf_counter() - started) / max(len(records), 1))
        return outcomes

    async def process_candidate(self, candidate: Candidate, vector: np.ndarray | None = None) -> str:
        """Apply one candidate and send what it produced; return the outcome.

        `vector` is the candidate's embedding when the caller embedded a batch at once.
        """
        started = time.perf_counter()
        if vector is None:
            vector = (await self.embed([candidate.fact.summary]))[0]
        current = self.store.state()
        same_fact = None
        if self.llm.provider is not None and not current.is_applied(candidate):
            # The check band is decided by the LLM when one is configured (it falls back to the
            # heuristics itself on timeout or error).
            fact = candidate.fact
            same_fact = {
                m.id: await self.llm.same_fact(fact.summary, m.summary, a_entities=fact.entities,
                                               b_entities=m.entities)
                for m in current.check_band(candidate, vector)[:2]
            }
        applied = current.apply(candidate, vector, same_fact)
        if not applied.replayed:
            stored = current.memory(applied.memory_id)  # a correction said as an event is semantic
            metrics.record_decision(stored.type if stored else candidate.fact.type, applied.outcome,
                                    applied.similarity, time.perf_counter() - started)
        for event in applied.events:
            await self.outputs.event(event)
        await self.outputs.progress(progress_of(candidate, applied.outcome, applied.memory_id))
        return applied.outcome

    async def _handle_one(self, record: Record, candidate: Candidate | None,
                          vector: np.ndarray | None) -> str:
        if candidate is None:
            # Our own internal topic: a bad record here is a bug or a foreign producer.
            await self.outputs.dead_letter_record(record, STAGE, "invalid_candidate",
                                                  "record is not a valid Candidate")
            return "dlq"
        try:
            return await self.process_candidate(candidate, vector)
        except Exception as exc:  # noqa: BLE001 - never block the partition on one record
            log.exception("dedup failed on %s fact %d", candidate.turn.ref, candidate.fact_index)
            await self.outputs.dead_letter_record(record, STAGE, "internal_error", type(exc).__name__)
            await self.outputs.progress(progress_of(candidate, "dlq", None))
            return "dlq"


def parse_candidate(record: Record) -> Candidate | None:
    try:
        return Candidate.model_validate_json(record.value or b"")
    except ValueError:
        return None


def progress_of(candidate: Candidate, outcome: str, memory_id: str | None) -> TurnProgress:
    """The progress record of one fact of a turn."""
    turn = candidate.turn
    return TurnProgress(
        user_id=turn.user_id, thread_id=turn.thread_id, turn_id=turn.turn_id, stage=STAGE,
        outcome=outcome, fact_index=candidate.fact_index,  # type: ignore[arg-type]
        fact_count=candidate.fact_count, memory_id=memory_id,
    )
