"""Stage 2 — dedup/merge: `memory.candidates` → embed, search the user's own memories, create,
update or supersede → `memory.events`; and the commands said in chat, applied in turn order.

State: the memory tables and the vector index (`streams.memory.store.MemoryStore`). Outputs:
`memory.events` (created/updated/superseded), `memory.progress`, `memory.candidates.dlq`.

Lifecycle: after each item of a record (`item_position`), in the record's scope, the stage
hands its event time to the lifecycle runner (`streams.lifecycle.runner`), which moves the
partition's watermark and runs the passes that are due (forgetting, promotion, consolidation,
insights) for a bounded number of users.

Idempotency: a candidate's id is deterministic (user, source turn, fact index). The `applied`
table remembers what each candidate did and the events it produced, so a replayed candidate
(after a crash or a re-sent turn) changes nothing and re-sends the identical events.

Run by `agents/dedup.py` in the worker and by `streams.app.inprocess` without Kafka.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from streams.errors import InvalidRecord
from streams.memory.candidates import apply_candidate, check_band
from streams.memory.commands import CommandError
from streams.memory.store import MemoryStore
from streams.memory.vector_index import decode_sized, encode_context_vector, encode_vector
from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.observability.stage_cpu import cpu_counted
from streams.pipeline.commands import apply_command
from streams.pipeline.outputs import Outputs
from streams.pipeline.records import Record, RecordScope, StageClock, no_scope
from streams.pipeline.retries import RetryPolicy, StageRetries
from streams.privacy.crypto import SealError
from streams.privacy.payloads import open_record
from streams.privacy.sealed import Sealer
from streams.proactivity import ProactivityPolicy
from streams.providers.embedders import Embed, EmbedderError
from streams.guarded.llm import GuardedLLM
from streams.write.contextual import FactTexts, TextVectors, fact_vectors
from topics.candidates import MAX_ITEMS_PER_RECORD, Candidate, CandidateItem, ChatCommand, candidate_items
from topics.progress import Outcome, TurnProgress

if TYPE_CHECKING:
    from streams.lifecycle.runner import LifecycleRunner

log = logging.getLogger(__name__)
STAGE = "dedup"


class DedupStage:
    """Candidates (and commands said in chat) in, memory events out."""

    def __init__(self, store: MemoryStore, embed: Embed, llm: GuardedLLM, outputs: Outputs,
                 record_scope: RecordScope = no_scope,
                 lifecycle: LifecycleRunner | None = None,
                 proactivity: ProactivityPolicy | None = None,
                 vectors: TextVectors | None = None, retry_policy: RetryPolicy = RetryPolicy()) -> None:
        """`lifecycle` runs after each record (module doc); `proactivity` decides which created
        or changed memories go to `memory.proactivity` (none without it); `vectors`: the
        candidates' texts' embeddings ingest made (the worker's, `Services.vectors`);
        `retry_policy`: how an item whose work failed is retried (`streams.pipeline.retries`)."""
        self.retries = StageRetries(STAGE, retry_policy, record_faults=(CommandError,))
        self.vectors = vectors if vectors is not None else TextVectors()
        self.lifecycle = lifecycle
        self.proactivity = proactivity
        self.store = store
        self.embed = embed
        self.llm = llm
        self.outputs = outputs
        self.record_scope = record_scope

    async def handle_batch(self, records: Sequence[Record]) -> list[list[str]]:
        """Process records, and the items of each (`topics.candidates`), in order, embedding
        all new summaries in one model call; return each record's outcomes. The events of the
        batch go out once its table writes are flushed, one record per user, and its progress
        last, one record per user too (`Outputs.held_per_batch`).

        Never raises: a bad record, or an item that cannot be applied, dead-letters that record
        (`memory.candidates.dlq`) and the others go on. An item whose work fails for any other
        reason is retried, the partition waiting (`streams.pipeline.retries`). A record
        dead-lettered for one item holds the others too: replayed, those change nothing
        (`applied`).
        """
        started = time.perf_counter()
        metrics.STAGE_RECORDS.labels(stage=STAGE).inc(len(records))
        clocks = [StageClock.start(record, STAGE) for record in records]
        parsed = [(record, self.parse(record)) for record in records]
        await self._index_ready()
        vectors = await self._vectors_of([c for _, items in parsed if not isinstance(items, InvalidRecord)
                                          for c in items if isinstance(c, Candidate)])
        async with self.outputs.held_per_batch(STAGE):
            outcomes = []
            for (record, items), clock in zip(parsed, clocks):
                with self.record_scope(record):
                    if not isinstance(items, InvalidRecord):
                        items = [vectors.get(id(item), item) for item in items]
                    outcomes.append(await self._handle_record(record, items, clock))
            self.store.tables.flush()
        metrics.STAGE_SECONDS.labels(stage=STAGE).observe(
            (time.perf_counter() - started) / max(len(records), 1))
        return outcomes

    async def _index_ready(self) -> None:
        """Rebuild a stale index without holding the event loop. Never raises: on a failure
        each record meets it again inside its own error handling (`store.state()`)."""
        try:
            await self.store.ready()
        except Exception as exc:  # noqa: BLE001 - the records go on one at a time
            metrics.STAGE_ERRORS.labels(stage=STAGE, error=type(exc).__name__).inc()
            log.error("vector index rebuild failed: %s", describe_failure(exc))

    async def _vectors_of(self, candidates: list[Candidate]) -> dict[int, Candidate]:
        """`_with_vectors(candidates)`, or empty when the embedding fails: each candidate is
        then embedded alone, inside its own error handling."""
        try:
            return await self._with_vectors(candidates)
        except Exception as exc:  # noqa: BLE001 - fall back to one record at a time
            metrics.STAGE_ERRORS.labels(stage=STAGE, error=type(exc).__name__).inc()
            log.error("dedup batch embedding failed, records go one at a time: %s",
                      describe_failure(exc))
            return {}

    async def _with_vectors(self, candidates: list[Candidate]) -> dict[int, Candidate]:
        """The candidates that carry no vectors, by `id()`, given them (`vector_b64`,
        `context_b64`): made from the texts they carry, found in the worker's `TextVectors`
        (ingest embedded them) or embedded in one model call. A replay gets them too: its
        `applied` record names them instead of repeating them (`applied.Carried`). A candidate
        that carries vectors (written before candidates carried texts) keeps them."""
        dim = self.store.state().config.profile.dim
        bare = [c for c in candidates if carried_vector(c, dim) is None]
        if not bare:
            return {}
        made = await fact_vectors([FactTexts.of(c) for c in bare], self.embed, self.vectors,
                                  take_summaries=True)
        return {id(c): c.model_copy(update={
            "vector_b64": encode_vector(summary),
            "context_b64": None if context is None else encode_context_vector(context)})
            for c, (summary, context) in zip(bare, made)}

    async def process_candidate(self, candidate: Candidate, clock: StageClock | None = None) -> str:
        """Apply one candidate and send what it produced; return the outcome.

        Its vectors are the ones the batch gave it (`_vectors_of`), else made now; `clock`
        stamps its progress record (from when its batch was taken).
        """
        clock = clock or StageClock(None, time.perf_counter())
        started = time.perf_counter()
        current = self.store.state()
        vector = carried_vector(candidate, current.config.profile.dim)
        if vector is None:  # the batch could not give it its vectors
            candidate = (await self._with_vectors([candidate])).get(id(candidate), candidate)
            vector = carried_vector(candidate, current.config.profile.dim)
        if vector is None:  # an embedder that answers a vector of another size
            raise EmbedderError(f"the embedder gave no {current.config.profile.dim}-value vector")
        same_fact = None
        if self.llm.provider is not None and not current.is_applied(candidate):
            # The check band is decided by the LLM when one is configured (it falls back to the
            # heuristics itself on timeout or error).
            fact = candidate.fact
            same_fact = {
                m.id: await self.llm.same_fact(fact.summary, m.summary, a_entities=fact.entities,
                                               b_entities=m.entities)
                for m in check_band(current, candidate, vector)[:2]
            }
        applied = apply_candidate(current, candidate, vector, same_fact)
        stored = None
        if not applied.replayed:
            stored = current.memory(applied.memory_id)  # a correction said as an event is semantic
            metrics.record_decision(stored.type if stored else candidate.fact.type, applied.outcome,
                                    applied.similarity, time.perf_counter() - started)
        for event in applied.events:
            await self.outputs.event(event)
        if (not applied.replayed and self.proactivity is not None and stored is not None
                and applied.outcome in ("created", "updated", "superseded")):
            # Sent at once, while the memory's events wait for the batch's end
            # (`Outputs.held_per_batch`): a consumer may see the offer before them. A replay
            # sent it (or decided not to) the first time.
            offer = self.proactivity.consider(current.tables.users, stored, candidate.turn.ts)
            if offer is not None:
                metrics.PROACTIVITY_CANDIDATES.labels(reason=offer.reason).inc()
                await self.outputs.proactivity(offer)
        await self.outputs.progress(clock.stamp(progress_of(candidate, applied.outcome,
                                                             applied.memory_id)))
        return applied.outcome

    def parse(self, record: Record) -> list[CandidateItem] | InvalidRecord:
        """The record's facts and chat commands, opened; or why not (never raises)."""
        return parse_candidates(record, self.outputs.sealer)

    async def _handle_record(self, record: Record, items: list[CandidateItem] | InvalidRecord,
                             clock: StageClock) -> list[str]:
        """The outcome of each item of `record`, in order. A bad record, or one with an item
        that fails, is dead-lettered once, with the first failure's reason."""
        if isinstance(items, InvalidRecord):
            await self.outputs.dead_letter(record, STAGE, items.reason, items.detail)
            await self._after_item(record, 0, None)
            return ["dlq"]
        outcomes, letters = [], []
        for index, item in enumerate(items):
            outcome, letter = await self._handle_one(record, item, clock)
            outcomes.append(outcome)
            if letter is not None:
                letters.append(letter)
            await self._after_item(record, index, item)
            # Applying an item is CPU work on the event loop: let ingest take the next turn (and
            # the web routes answer) between two items, not after a whole record of up to 32.
            await asyncio.sleep(0)
        if letters:
            reason, detail, ref = letters[0]
            await self.outputs.dead_letter(record, STAGE, reason, detail, ref)
        return outcomes

    async def _after_item(self, record: Record, index: int, item: CandidateItem | None) -> None:
        """Hand the lifecycle runner the item's event time, at the item's position in the
        partition (`item_position`): it runs after each item, as it did when each fact was a
        record of its own, so what it does depends on the items in order, not on how ingest
        batched them into records."""
        if self.lifecycle is None:
            return
        user_id, ts = event_time_of(item)
        await cpu_counted("lifecycle", self.lifecycle.after_record(
            record.partition, user_id, ts, item_position(record.offset, index)))

    async def _handle_one(self, record: Record, item: CandidateItem,
                          clock: StageClock) -> tuple[str, tuple[str, str, str | None] | None]:
        """The item's outcome, and (reason, detail, ref) when its record must be
        dead-lettered for it."""
        async def apply() -> str:
            if isinstance(item, ChatCommand):
                return (await apply_command(self.store, self.embed, self.outputs, item.command, clock)).outcome
            return await self.process_candidate(item, clock=clock)

        try:
            return await self.retries.run(f"{record.topic}[{record.partition}]@{record.offset}", apply), None
        except CommandError as exc:
            ref = item.command.command_id if isinstance(item, ChatCommand) else None
            return "dlq", ("inapplicable", str(exc), ref)
        except Exception as exc:  # noqa: BLE001 - a bug past its retries (STAGE_ON_BUG=dead_letter)
            metrics.STAGE_ERRORS.labels(stage=STAGE, error=type(exc).__name__).inc()
            log.error("dedup failed on %s[%d]@%d: %s", record.topic, record.partition,
                      record.offset, describe_failure(exc))
            if isinstance(item, Candidate):
                await self._send_progress(clock.stamp(progress_of(item, "dlq", None)))
            return "dlq", ("internal_error", type(exc).__name__, None)

    async def _send_progress(self, progress: TurnProgress) -> None:
        try:
            await self.outputs.progress(progress)
        except Exception as exc:  # noqa: BLE001 - progress is bookkeeping; the partition moves on
            log.error("dedup progress not sent: %s", describe_failure(exc))


def parse_candidates(record: Record, sealer: Sealer) -> list[CandidateItem] | InvalidRecord:
    """A `memory.candidates` record's facts and chat commands (`topics.candidates`), opened
    with `sealer`; or why it holds none (never raises)."""
    try:
        return candidate_items(open_record(sealer, record.value or b""))
    except SealError:
        # Sealed with a key that is gone: the user was purged after it was sent.
        return InvalidRecord("sealed_unreadable", "sealed with a key that is gone (a purged user)")
    except (ValueError, RecursionError):
        # Our own internal topic: a bad record here is a bug or a foreign producer.
        return InvalidRecord("invalid_candidate", "record is not a valid Candidate or ChatCommand")


def event_time_of(item: CandidateItem | None) -> tuple[str | None, datetime | None]:
    """The user and event time of an item (none for a record that did not parse)."""
    if isinstance(item, Candidate):
        return item.turn.user_id, item.turn.ts
    if isinstance(item, ChatCommand):
        return item.command.user_id, item.command.ts
    return None, None


def item_position(offset: int, index: int) -> int:
    """Where item `index` of the record at `offset` stands in its partition, for the lifecycle
    (which keys its outbox and hour marks by it): `offset × MAX_ITEMS_PER_RECORD + index`,
    increasing with the items in order. A record parses only with at most that many items
    (`topics.candidates.candidate_items`), so positions never collide."""
    return offset * MAX_ITEMS_PER_RECORD + index


def progress_of(candidate: Candidate, outcome: Outcome, memory_id: str | None) -> TurnProgress:
    """The progress record of one fact of a turn."""
    turn = candidate.turn
    return TurnProgress(
        user_id=turn.user_id, thread_id=turn.thread_id, turn_id=turn.turn_id, stage=STAGE,
        outcome=outcome, fact_index=candidate.fact_index,
        fact_count=candidate.fact_count, memory_id=memory_id,
    )


def carried_vector(candidate: Candidate, dim: int) -> np.ndarray | None:
    """The embedding ingest put in the candidate, if it is one of this embedder's size."""
    return decode_sized(candidate.vector_b64, dim)
