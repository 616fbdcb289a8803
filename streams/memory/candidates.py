"""A candidate fact against the user's memories: create, update (merge), or supersede (docs/architecture.md#write-path).

The decision itself is `streams.memory.dedup.decide` (seed 002 bands, same-fact heuristics,
changed values); this module finds the neighbours, applies what was decided to the tables and
the index, and announces it.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import numpy as np

from streams.memory import applied, consent, dedup, users, write_budget
from streams.memory.applied import Applied
from streams.memory.documents import applied_key, candidate_id, keys_match, merged_memory, new_memory, same_text
from streams.memory.linking import link
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.memory.supersede import supersede
from streams.memory.vector_index import UserIndex
from streams.observability import metrics
from topics.candidates import Candidate
from topics.events import MemoryEvent
from topics.progress import Outcome


def apply_candidate(state: MemoryState, candidate: Candidate, vector: np.ndarray,
                    same_fact: Mapping[str, bool] | None = None) -> Applied:
    """Create or update a memory from `candidate` (embedding `vector`).

    `same_fact`: an LLM's same-fact answers for check-band neighbours, by memory id.

    A candidate seen before returns the events it produced then, so a replay re-sends
    identical events (same event_id); it changes nothing but the writes of the first time that
    did not land (`streams.memory.applied.redo`). The writes are made together at the end
    (`streams.memory.applied.WriteSet`).
    """
    cid = candidate_id(candidate)
    key = applied_key(candidate)
    carried = carried_values(candidate)
    replay, made = applied.replay(state.tables, key, carried)
    state.reindex(made)
    if replay is not None:
        return replay
    writes = applied.WriteSet(state.tables)
    try:
        result = _apply(state.over(writes.tables), candidate, vector, same_fact, cid)
    except Exception:
        writes.make()  # a candidate that fails leaves what it wrote, as it always did
        raise
    writes.commit(key, result, carried)
    return result


def carried_values(candidate: Candidate) -> applied.Carried:
    """What a candidate carries that its memory's document stores as it is: its vectors, which
    its `applied` record then names instead of repeating (`streams.memory.applied.Carried`)."""
    return {name: value for name in ("vector_b64", "context_b64")
            if isinstance(value := getattr(candidate, name), str) and value}


def _apply(state: MemoryState, candidate: Candidate, vector: np.ndarray,
           same_fact: Mapping[str, bool] | None, cid: str) -> Applied:
    turn = candidate.turn
    user_index = state.index.user(turn.user_id)
    if candidate.fact.type == "episodic" and not candidate.source_refs:
        correction = as_correction(state, candidate, vector)
        if correction is not None:  # seed 003: fact corrections are never episodic inserts
            candidate = correction
    fact = candidate.fact
    neighbours = user_index.search(vector, state.config.neighbours_k, fact.type)
    decision = keyed_decision(candidate, user_index) or dedup.decide(
        memory_type=fact.type, summary=fact.summary, entities=fact.entities,
        event_time=turn.ts, neighbours=neighbours, profile=state.config.profile,
        merge_window=state.config.episodic_merge_window, use_heuristics=state.config.use_heuristics,
        same_fact=same_fact,
    )
    meta = {"similarity": round(decision.score, 4), "reason": decision.reason,
            "source_turn_id": turn.ref}
    events: list[MemoryEvent] = consent.expire_due(state, turn.user_id, turn.ts, turn.thread_id)
    if decision.action is dedup.Action.supersede and decision.target is not None:
        review = consent.review(state, candidate, cid, vector, decision.target)
        if review.held is not None:  # a profile change that waits for the user's consent
            users.note_turn(state.tables.users, turn.user_id, turn.ts, created=False)
            review.held.events[:0] = events
            return review.held
        events += review.events
    outcome: Outcome
    if decision.action is dedup.Action.update and decision.target is not None:
        target = decision.target
        if set(candidate.refs) <= set(target.source_turn_ids):
            outcome, memory = "duplicate", target
        else:
            outcome, memory = "updated", merged_memory(target, candidate)
            state.store(memory)
            events.append(state.announce("updated", memory, turn.thread_id, turn.ts, meta, old=target))
    else:
        existing = state.memory(cid)
        if existing is not None:  # written before a crash, `applied` not yet: keep it
            outcome, memory = "duplicate", existing
        else:
            outcome, memory = "created", new_memory(candidate, cid, vector)
            if _budgeted(decision, memory) and not _within_budget(
                    user_index, turn.ts, state.config.write_rate_limit_per_hour):
                memory = write_budget.down_ranked(memory)
                meta = {**meta, "write_budget": "over"}
                metrics.WRITE_BUDGET_OVER.inc()
            if decision.action is dedup.Action.supersede and decision.target is not None:
                outcome = "superseded"
                memory = memory.model_copy(update={
                    "related_ids": [decision.target.id],
                    # the slot keeps its concrete key: "Luna turned 4" replaces profile:pet:luna:age
                    "entity_key": decision.target.entity_key or memory.entity_key})
            state.store(memory, vector)
            events.append(state.announce("created", memory, turn.thread_id, turn.ts, meta))
            if decision.action is dedup.Action.supersede and decision.target is not None:
                events.append(supersede(state, decision.target, memory, turn.thread_id, turn.ts))
    users.note_turn(state.tables.users, turn.user_id, turn.ts,
                    created=outcome in ("created", "superseded"))
    if events:
        state.revisions.note_turn_memory(turn, memory.id)
        if memory.type == "semantic":
            link(state, memory, neighbours, turn.ts)
    result = Applied(outcome, memory.id, events)
    result.similarity = neighbours[0][1] if neighbours else None
    return result


def _budgeted(decision: dedup.DedupDecision, memory: Memory) -> bool:
    """Whether creating `memory` spends the write budget: a plain creation, not pinned, not an
    episode (seed 002 caps hot-path writes only)."""
    return (decision.action is dedup.Action.create and not memory.pinned
            and memory.type != "episodic")


def _within_budget(user_index: UserIndex, ts: datetime, limit: int) -> bool:
    """Whether a new memory at event time `ts` fits the user's write budget
    (`streams.memory.write_budget`): fewer than `limit` of their memories that
    `write_budget.spends` were created in the hour up to `ts`. `limit` 0: no budget."""
    if limit <= 0:
        return True
    return user_index.count_created(ts - write_budget.WINDOW, ts) < limit


def check_band(state: MemoryState, candidate: Candidate, vector: np.ndarray) -> list[Memory]:
    """Neighbours in the check band of the dedup bands: those a same-fact check decides."""
    fact = candidate.fact
    bands = dedup.bands_for(fact.type, state.config.profile)
    hits = state.index.user(candidate.turn.user_id).search(vector, state.config.neighbours_k, fact.type)
    return [m for m, score in hits if bands.check_low <= score < bands.auto]


def as_correction(state: MemoryState, candidate: Candidate, vector: np.ndarray) -> Candidate | None:
    """An "episodic" fact that changes a value of a semantic memory ("Luna turned 4 last week"
    after "Luna is 3") is a correction: it is handled as a semantic fact."""
    semantic = candidate.model_copy(
        update={"fact": candidate.fact.model_copy(update={"type": "semantic"})})
    user_index = state.index.user(candidate.turn.user_id)
    if keyed_decision(semantic, user_index) is not None:
        return semantic
    neighbours = user_index.search(vector, state.config.neighbours_k, "semantic")
    decision = dedup.decide(
        memory_type="semantic", summary=candidate.fact.summary, entities=candidate.fact.entities,
        event_time=candidate.turn.ts, neighbours=neighbours, profile=state.config.profile,
        merge_window=state.config.episodic_merge_window, use_heuristics=state.config.use_heuristics,
    )
    return semantic if decision.action is dedup.Action.supersede else None


def keyed_decision(candidate: Candidate, user_index: UserIndex) -> dedup.DedupDecision | None:
    """A fact with a deterministic entity key (`profile:pet:luna:age`) is the same fact as the
    active memory with that key: unchanged -> update, changed -> supersede."""
    fact = candidate.fact
    wanted = fact.entity_key
    if not wanted:
        return None
    keyed = user_index.with_entity_key(lambda key: keys_match(key, wanted))
    if not keyed:
        return None
    memory = keyed[0]
    if same_text(memory.summary, fact.summary):
        return dedup.DedupDecision(dedup.Action.update, memory, 1.0, "same_entity_key")
    return dedup.DedupDecision(dedup.Action.supersede, memory, 1.0, "entity_key_changed")
