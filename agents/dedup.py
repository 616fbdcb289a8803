"""Stage 2 — dedup/merge: embed candidates, search the user's own memories, create or update.

Input `memory.candidates`. State: the `memories`, `applied`, `users` and `thread_revs` tables,
worked on by `streams.memory.state.MemoryState`. Outputs: `memory.events` (created/updated),
`memory.progress`, `memory.candidates.dlq`.

Idempotency: a candidate's id is deterministic (user, source turn, fact index). The `applied`
table remembers what each candidate did and the events it produced, so a replayed candidate
(after a crash or a re-sent turn) changes nothing and re-sends the identical events.
"""
from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Sequence

import numpy as np
from faust.types import EventT

from streams.observability import metrics
from streams.app.factory import (
    app,
    applied_table,
    audit_table,
    candidates_topic,
    memories_table,
    settings,
    thread_revs_table,
    users_table,
)
from streams.providers.embedder import EmbedderProfile
from streams.app.faust_compat import event_scope
from streams.memory.model import Memory
from streams.memory.state import DedupConfig, MemoryState
from streams.pipeline.outputs import send_dead_letter, send_event, send_progress
from streams.app.services import embed, get_embedder, get_index, get_llm
from streams.memory.vector_index import VectorIndex
from topics.candidates import Candidate
from topics.dlq import DeadLetter
from topics.progress import TurnProgress

log = logging.getLogger(__name__)
STAGE = "dedup"



class IndexCache:
    """Rebuilds the in-worker vector index from the memories table after each recovery."""

    def __init__(self) -> None:
        self.stale = True

    def mark_stale(self) -> None:
        self.stale = True

    def ensure(self) -> VectorIndex:
        index = get_index()
        if self.stale:
            count = index.rebuild(Memory.model_validate(raw) for raw in memories_table.values())
            log.info("vector index rebuilt from the memories table: %d memories", count)
            self.stale = False
        return index


index_cache = IndexCache()


@memories_table.on_recover
async def _on_memories_recovered() -> None:
    index_cache.mark_stale()


def profile() -> EmbedderProfile:
    """The embedder profile's bands, with any override from the settings applied."""
    base = get_embedder().profile
    return EmbedderProfile(
        base.name, base.dim,
        settings.semantic_auto_update or base.semantic_auto,
        settings.semantic_check_low or base.semantic_check_low,
        settings.episodic_auto_update or base.episodic_auto,
        settings.episodic_check_low or base.episodic_check_low,
    )


def state() -> MemoryState:
    """The worker's memory state over its Faust tables."""
    return MemoryState(
        memories=memories_table, applied=applied_table, users=users_table,
        thread_revs=thread_revs_table, index=index_cache.ensure(), audit=audit_table,
        config=DedupConfig(
            profile=profile(), neighbours_k=settings.memory_neighbors_k, link_min=settings.link_min,
            episodic_merge_window=timedelta(hours=settings.episodic_merge_window_hours),
            use_heuristics=settings.memory_enable_entity_heuristics,
        ),
    )


def _progress(candidate: Candidate, outcome: str, memory_id: str | None) -> TurnProgress:
    turn = candidate.turn
    return TurnProgress(
        user_id=turn.user_id, thread_id=turn.thread_id, turn_id=turn.turn_id, stage=STAGE,
        outcome=outcome, fact_index=candidate.fact_index,  # type: ignore[arg-type]
        fact_count=candidate.fact_count, memory_id=memory_id,
    )


async def process_candidate(candidate: Candidate, vector: np.ndarray | None = None) -> str:
    """Apply one candidate and send what it produced; return the outcome.

    `vector` is the candidate's embedding when the caller embedded a batch at once.
    """
    started = time.perf_counter()
    if vector is None:
        vector = (await embed([candidate.fact.summary]))[0]
    current = state()
    same_fact = None
    llm = get_llm()
    if llm.provider is not None and not current.is_applied(candidate):
        # The check band is decided by the LLM when one is configured (it falls back to the
        # heuristics itself on timeout or error).
        fact = candidate.fact
        same_fact = {
            m.id: await llm.same_fact(fact.summary, m.summary, a_entities=fact.entities,
                                      b_entities=m.entities)
            for m in current.check_band(candidate, vector)[:2]
        }
    applied = current.apply(candidate, vector, same_fact)
    if not applied.replayed:
        stored = current.memory(applied.memory_id)  # a correction said as an event is semantic
        metrics.record_decision(stored.type if stored else candidate.fact.type, applied.outcome,
                                applied.similarity, time.perf_counter() - started)
    for event in applied.events:
        await send_event(event)
    await send_progress(_progress(candidate, applied.outcome, applied.memory_id))
    return applied.outcome


def parse_candidate(event: EventT) -> Candidate | None:
    try:
        return Candidate.model_validate_json(event.value or b"")
    except ValueError:
        return None


async def handle_batch(events: Sequence[EventT]) -> list[str]:
    """Process candidate records in order, embedding all new summaries in one model call.

    Failures go to `memory.candidates.dlq`; the partition never blocks.
    """
    started = time.perf_counter()
    metrics.STAGE_RECORDS.labels(stage=STAGE).inc(len(events))
    parsed = [(event, parse_candidate(event)) for event in events]
    current = state()
    fresh = [c for _, c in parsed if c is not None and not current.is_applied(c)]
    vectors = dict(zip(map(id, fresh), await embed([c.fact.summary for c in fresh]))) if fresh else {}
    outcomes = []
    for event, candidate in parsed:
        with event_scope(event):
            outcomes.append(await _handle_one(event, candidate, vectors.get(id(candidate))))
    metrics.STAGE_SECONDS.labels(stage=STAGE).observe((time.perf_counter() - started) / max(len(events), 1))
    return outcomes


async def _handle_one(event: EventT, candidate: Candidate | None, vector: np.ndarray | None) -> str:
    if candidate is None:
        # Our own internal topic: a bad record here is a bug or a foreign producer.
        await _dead_letter(event, "invalid_candidate", "record is not a valid Candidate")
        return "dlq"
    try:
        return await process_candidate(candidate, vector)
    except Exception as exc:  # noqa: BLE001 - never block the partition on one record
        log.exception("dedup failed on %s fact %d", candidate.turn.ref, candidate.fact_index)
        await _dead_letter(event, "internal_error", type(exc).__name__)
        await send_progress(_progress(candidate, "dlq", None))
        return "dlq"


async def _dead_letter(event: EventT, reason: str, detail: str) -> None:
    message = event.message
    await send_dead_letter(
        DeadLetter.wrap(
            stage=STAGE, reason=reason, error=detail, topic=message.topic,
            partition=message.partition, offset=message.offset, key=message.key,
            raw=event.value or b"",
        ),
        message.key,
    )


@app.agent(candidates_topic, name="dedup")
async def dedup_agent(stream):  # type: ignore[no-untyped-def]
    """Consume `memory.candidates` in small batches; yields each outcome.

    (Yielding lets `test_context().put` await the processing of what it put.)
    """
    within = settings.dedup_batch_within_ms / 1000
    async for events in stream.take_events(settings.dedup_batch_size, within=within):
        for outcome in await handle_batch(events):
            yield outcome
