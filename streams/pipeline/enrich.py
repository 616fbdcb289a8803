"""Stage enrich — what the model adds, a window of turns at a time: `chat.turns` → `memory.candidates`.

With an LLM in hybrid mode and `LLM_EXTRACTION=deferred` (the default), ingest stores what the
rules find at once and asks no model: a turn's first memories do not wait for one. This stage
reads the same turns, gathers those of `LLM_WINDOW_SECONDS` (`LLM_WINDOW_TURNS` at most), and
asks the model about them together: a thread's turns in one call, `LLM_BATCH_TURNS` at most
(`GuardedLLM.model_facts_many`), so the instructions and the context are paid once a call, not
once a turn. What the model says that the rules did not (`FactPipeline.added_by_model`) becomes
more candidates of the same turns, numbered from `topics.candidates.MODEL_FACT_INDEX`, through
the same write policy; dedup merges a paraphrase of a stored fact as it does any other.

Nothing is kept between windows but Kafka's offsets: the agent acks a window's turns only once
their candidates are sent (`TurnWindow`), so a restart asks again about the turns of a window it
had not finished, and deterministic memory ids make a second answer change nothing
(`applied`). A turn ingest refuses is skipped without a dead letter (ingest writes that one); a
call that fails or answers badly leaves the turn to the rules (counted by `GuardedLLM`); a failure
of this stage itself is logged and counted, and the window's turns keep the rules' facts: the
model's are an addition, never the floor.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

from streams.errors import InvalidRecord
from streams.memory.tables import thread_key
from streams.memory.users import blocked_topics
from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.pipeline.ingest import HeldCandidates, IngestStage, TurnPlan
from streams.pipeline.records import Record, StageClock
from streams.pipeline.retries import RetryPolicy, StageRetries
from streams.write.contextual import context_of
from streams.write.facts import Asked, candidates_of
from topics.candidates import MODEL_FACT_INDEX
from topics.turns import Turn

log = logging.getLogger(__name__)

STAGE = "enrich"


def thread_turns(buffers: Any, turn: Turn) -> list[dict[str, Any]]:
    """The thread's buffered turns up to `turn` (as ingest left them: secrets redacted): the
    buffer may already hold the turns after it, which its context must not see."""
    entry = buffers.get(thread_key(turn.user_id, turn.thread_id)) or {}
    turns = list(entry.get("turns", []))
    for at, buffered in enumerate(turns):
        if buffered.get("turn_id") == turn.turn_id:
            return turns[:at + 1]
    return [t for t in turns if Turn.model_validate(t).ts <= turn.ts]


class EnrichStage:
    """A window of turns in, the model's further candidates out (module doc)."""

    def __init__(self, ingest: IngestStage) -> None:
        """Built over an ingest stage of the same kit: its parsing, tables, policy, model,
        embedding of candidate texts and outputs are this stage's too."""
        self.ingest = ingest
        self.retries = StageRetries(STAGE, RetryPolicy.of(ingest.settings.input))

    async def handle_batch(self, records: Sequence[Record]) -> list[int]:
        """Ask the model about the turns of `records` together; return the facts each added.
        Never raises (module doc)."""
        started = time.perf_counter()
        metrics.STAGE_RECORDS.labels(stage=STAGE).inc(len(records))
        added = {id(record): 0 for record in records}
        try:
            plans = await self._plans(records)
            await self.ingest.with_vectors([plan for _, plan in plans])
            await self._send(plans)
            for record, plan in plans:
                added[id(record)] = len(plan.candidates)
        except Exception as exc:  # noqa: BLE001 - the rules' facts stand; nothing is lost
            metrics.STAGE_ERRORS.labels(stage=STAGE, error=type(exc).__name__).inc()
            log.error("enrich could not add the model's facts of %d turn(s): %s", len(records),
                      describe_failure(exc))
        metrics.STAGE_SECONDS.labels(stage=STAGE).observe(
            (time.perf_counter() - started) / max(len(records), 1))
        return [added[id(record)] for record in records]

    async def _plans(self, records: Sequence[Record]) -> list[tuple[Record, TurnPlan]]:
        """The turns worth asking about, asked together, and a plan for each that gained facts."""
        asked: list[tuple[Record, Asked, list[dict[str, Any]]]] = []
        for record in records:
            with self.ingest.record_scope(record):
                found = self._asked(record)
            if found is not None:
                asked.append((record, *found))
        if not asked:
            return []
        results = await self.ingest.facts.added_by_model([a for _, a, _ in asked], self.ingest.llm)
        plans = []
        for (record, item, buffered), result in zip(asked, results):
            if not result.facts:
                continue
            plan = TurnPlan(item.turn, StageClock.start(record, STAGE), outcome="candidates")
            plan.candidates = candidates_of(item.turn, result, context=context_of(item.turn, buffered),
                                            first_index=MODEL_FACT_INDEX)
            plans.append((record, plan))
        return plans

    def _asked(self, record: Record) -> tuple[Asked, list[dict[str, Any]]] | None:
        """The record's turn with what it is understood with (and its thread's buffered turns
        up to it, its candidates' context), or None when the model is not to be asked: a
        record ingest refuses, memory off, an answer to a consent proposal."""
        ingest = self.ingest
        try:
            turn = ingest.parse(record)
        except InvalidRecord:
            return None  # ingest dead-letters it
        if not ingest.settings.write.memory_enabled or ingest.consent_ack(turn) is not None:
            return None
        buffered = thread_turns(ingest.tables.buffers, turn)
        return Asked(turn, blocked_topics(ingest.tables.users, turn.user_id),
                     [Turn.model_validate(t) for t in buffered]), buffered

    async def _send(self, plans: Sequence[tuple[Record, TurnPlan]]) -> None:
        """Each plan's candidate events and candidates, one record of candidates per user as
        the window ends, a passing fault retried (the partition waiting, as in ingest)."""
        held = HeldCandidates()
        async with self.ingest.outputs.held_per_batch(STAGE):
            for record, plan in plans:
                with self.ingest.record_scope(record):
                    await self.ingest.send_candidates(plan, held.holder(record, plan.turn))
            self.ingest.tables.flush()
            for user_id, items in held.items.items():
                values = [item for _, _, item in items]
                await self.retries.run(f"the model's candidates of {len(values)} turn(s)",
                                       functools.partial(self.ingest.outputs.candidates, user_id, values))


T = TypeVar("T")


class TurnWindow(Generic[T]):
    """The turns (Faust events) gathered for the next question to the model, and when to ask.

    A window is asked about once it is `seconds` old (by `clock`), holds `turns`, or `urgent()`
    says so (a rebalance or a stop: Faust waits for every turn it handed out to be acked before
    it lets a partition go, and a window two minutes long must not hold a rebalance that long).
    `ask` gets a window's turns, in order, and acks them once done. One task asks, a window at a
    time, in order, while the next fills; `add` waits only when a window is already waiting
    behind the one being asked (the stream's backpressure). `start` the asking task, `stop` it.
    """

    def __init__(self, ask: Callable[[list[T]], Awaitable[None]], *, seconds: float, turns: int,
                 clock: Callable[[], float] = time.monotonic,
                 urgent: Callable[[], bool] = lambda: False) -> None:
        self._ask, self.seconds, self.turns = ask, seconds, turns
        self.clock, self.urgent = clock, urgent
        self.items: list[T] = []
        self.opened_at: float | None = None
        self._closed: asyncio.Queue[list[T]] = asyncio.Queue(maxsize=1)
        self._asker: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._asker = asyncio.ensure_future(self._asking())

    async def stop(self) -> None:
        """Stop asking; a window not asked about is left unacked (asked again after a restart)."""
        if self._asker is not None:
            self._asker.cancel()
            await asyncio.gather(self._asker, return_exceptions=True)

    async def _asking(self) -> None:
        while True:
            items = await self._closed.get()
            try:
                await self._ask(items)
            except Exception as exc:  # noqa: BLE001 - unacked, the turns are asked again after a restart
                log.error("enrich could not finish a window of %d turn(s): %s", len(items),
                          describe_failure(exc))
            finally:
                self._closed.task_done()

    def due(self) -> bool:
        """Whether the window is to be asked about now."""
        if not self.items or self.opened_at is None:
            return False
        return (len(self.items) >= self.turns or self.clock() - self.opened_at >= self.seconds
                or self.urgent())

    async def add(self, item: T) -> None:
        """One more turn; the window is handed over when it is due."""
        if not self.items:
            self.opened_at = self.clock()
        self.items.append(item)
        await self.tick()

    async def tick(self) -> None:
        """Hand the window over if it is due (the agent calls this every `TICK_SECONDS`)."""
        if self.due():
            await self.close()

    async def close(self) -> None:
        """Hand the window over now and open a new one."""
        items, self.items, self.opened_at = self.items, [], None
        if items:
            await self._closed.put(items)

    async def drain(self) -> None:
        """Wait until every window handed over has been asked about."""
        await self._closed.join()


TICK_SECONDS = 0.25
"""How often the enrich agent looks whether its window is due (a rebalance waits this long at
most for the window to be handed over)."""
