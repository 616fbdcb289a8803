"""Stage 2 — dedup/merge: embed a candidate, search the user's own memories, create or update.

Input `memory.candidates`. State: `memories`, `applied`, `users`, `thread_revs` tables.
Outputs: `memory.events` (created/updated), `memory.progress`.

Idempotency: the candidate id is deterministic (user, source turn, fact index). The `applied`
table remembers what each candidate did and the event it produced, so a replayed candidate
(after a crash or a re-sent turn) changes nothing and re-sends the identical event.
"""
from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import Sequence

import numpy as np
from faust.types import EventT

from streams import dedup, ids, metrics
from streams.app import (
    app,
    applied_table,
    candidates_topic,
    memories_table,
    settings,
    thread_revs_table,
    users_table,
)
from streams.embedder import EmbedderProfile
from streams.faust_compat import event_scope
from streams.memory import Memory
from streams.outputs import send_dead_letter, send_event, send_progress
from streams.services import embed, get_embedder, get_index
from streams.vector_index import VectorIndex, encode_vector
from topics.candidates import Candidate
from topics.dlq import DeadLetter
from topics.events import MemoryEvent
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
            count = index.rebuild(load_memory(raw) for raw in memories_table.values())
            log.info("vector index rebuilt from the memories table: %d memories", count)
            self.stale = False
        return index


index_cache = IndexCache()


@memories_table.on_recover
async def _on_memories_recovered() -> None:
    index_cache.mark_stale()


def load_memory(value: dict) -> Memory:
    return Memory.model_validate(value)


def dump_memory(memory: Memory) -> dict:
    return memory.model_dump(mode="json")


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


def next_rev(user_id: str, thread_id: str) -> int:
    """Increment and return the thread's revision (one writer per partition: atomic)."""
    key = f"{user_id}|{thread_id}"
    rev = thread_revs_table[key] + 1
    thread_revs_table[key] = rev
    return rev


def touch_user(user_id: str, clock: datetime, created: bool) -> None:
    info = dict(users_table.get(user_id) or {"memories": 0, "clock": clock.isoformat()})
    info["memories"] += 1 if created else 0
    info["clock"] = max(datetime.fromisoformat(info["clock"]), clock).isoformat()
    users_table[user_id] = info


def new_memory(candidate: Candidate, memory_id: str, vector_b64: str) -> Memory:
    turn, fact = candidate.turn, candidate.fact
    return Memory(
        id=memory_id, user_id=turn.user_id, type=fact.type, category=fact.category,
        summary=fact.summary, tags=fact.tags, entities=fact.entities, entity_key=fact.entity_key,
        source=turn.source, importance=fact.importance, created_at=turn.ts, updated_at=turn.ts,
        last_accessed=turn.ts, valid_from=turn.ts, source_turn_ids=[turn.ref],
        agent_id=turn.agent_id, run_id=turn.run_id, actor_id=turn.actor_id, role=turn.role.value,
        thread_id=turn.thread_id, embedding_b64=vector_b64,
    )


def merged_memory(target: Memory, candidate: Candidate) -> Memory:
    """Seed 002 merge: union tags, max importance, extend provenance, refresh last_accessed."""
    turn, fact = candidate.turn, candidate.fact
    return target.model_copy(
        update={
            "tags": sorted(set(target.tags) | set(fact.tags)),
            "entities": sorted(set(target.entities) | set(fact.entities)),
            "importance": max(target.importance, fact.importance),
            "source_turn_ids": [*target.source_turn_ids, turn.ref],
            "last_accessed": max(target.last_accessed, turn.ts),
            "updated_at": max(target.updated_at, turn.ts),
            "last_verified_at": turn.ts,
            "version": target.version + 1,
        }
    )


def make_event(kind: str, memory: Memory, candidate: Candidate, rev: int, meta: dict) -> MemoryEvent:
    turn = candidate.turn
    return MemoryEvent(
        event_id=ids.event_id(memory.id, kind, memory.version), kind=kind,  # type: ignore[arg-type]
        user_id=memory.user_id, thread_id=turn.thread_id, memory_id=memory.id, rev=rev,
        ts=turn.ts, summary=memory.summary, category=memory.category,
        meta={"type": memory.type, "source_turn_id": turn.ref, **meta},
    )


def _progress(candidate: Candidate, outcome: str, memory_id: str | None) -> TurnProgress:
    turn = candidate.turn
    return TurnProgress(
        user_id=turn.user_id, thread_id=turn.thread_id, turn_id=turn.turn_id, stage=STAGE,
        outcome=outcome, fact_index=candidate.fact_index,  # type: ignore[arg-type]
        fact_count=candidate.fact_count, memory_id=memory_id,
    )


def already_applied(candidate: Candidate) -> bool:
    turn = candidate.turn
    return ids.memory_id(turn.user_id, turn.ref, candidate.fact_index) in applied_table


async def process_candidate(candidate: Candidate, vector: np.ndarray | None = None) -> str:
    """Apply one candidate; return the outcome (created, updated, duplicate).

    `vector` is the candidate's embedding when the caller embedded a batch at once.
    """
    turn, fact = candidate.turn, candidate.fact
    candidate_id = ids.memory_id(turn.user_id, turn.ref, candidate.fact_index)
    prior = applied_table.get(candidate_id)
    if prior is not None:  # a replay: change nothing, re-send what it produced the first time
        record = prior
        if record.get("event"):
            await send_event(MemoryEvent.model_validate(record["event"]))
        await send_progress(_progress(candidate, record["outcome"], record["memory_id"]))
        return record["outcome"]

    if vector is None:
        vector = (await embed([fact.summary]))[0]
    index = index_cache.ensure().user(turn.user_id)
    neighbours = index.search(
        vector, settings.memory_neighbors_k, accept=lambda m: m.is_visible and m.type == fact.type
    )
    if neighbours:
        metrics.SIMILARITY.observe(neighbours[0][1])
    decision = dedup.decide(
        memory_type=fact.type, summary=fact.summary, entities=fact.entities, event_time=turn.ts,
        neighbours=neighbours, profile=profile(),
        merge_window=timedelta(hours=settings.episodic_merge_window_hours),
        use_heuristics=settings.memory_enable_entity_heuristics,
    )
    event: MemoryEvent | None = None
    if decision.action is dedup.Action.update and decision.target is not None:
        target = decision.target
        if turn.ref in target.source_turn_ids:
            outcome, memory = "duplicate", target
        else:
            outcome, memory = "updated", merged_memory(target, candidate)
            memories_table[memory.id] = dump_memory(memory)
            index.update_doc(memory)
            event = make_event(
                "updated", memory, candidate, next_rev(turn.user_id, turn.thread_id),
                {"similarity": round(decision.score, 4), "reason": decision.reason},
            )
    else:
        existing = memories_table.get(candidate_id)
        if existing is not None:  # written before a crash, `applied` not yet: keep it
            outcome, memory = "duplicate", load_memory(existing)
        else:
            outcome = "created"
            memory = new_memory(candidate, candidate_id, encode_vector(vector))
            memories_table[memory.id] = dump_memory(memory)
            index.upsert(memory, vector)
            event = make_event(
                "created", memory, candidate, next_rev(turn.user_id, turn.thread_id),
                {"similarity": round(decision.score, 4), "reason": decision.reason},
            )
    metrics.DECISIONS.labels(type=fact.type, decision=outcome).inc()
    touch_user(turn.user_id, turn.ts, created=outcome == "created")
    applied_table[candidate_id] = {
        "outcome": outcome, "memory_id": memory.id,
        "event": event.model_dump(mode="json") if event else None,
    }
    if event is not None:
        await send_event(event)
    await send_progress(_progress(candidate, outcome, memory.id))
    return outcome


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
    parsed = [(event, parse_candidate(event)) for event in events]
    fresh = [c for _, c in parsed if c is not None and not already_applied(c)]
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


@app.agent(candidates_topic, name="dedup")
async def dedup_agent(stream):  # type: ignore[no-untyped-def]
    """Consume `memory.candidates` in small batches; yields each outcome.

    (Yielding lets `test_context().put` await the processing of what it put.)
    """
    within = settings.dedup_batch_within_ms / 1000
    async for events in stream.take_events(settings.dedup_batch_size, within=within):
        for outcome in await handle_batch(events):
            yield outcome
