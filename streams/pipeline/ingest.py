"""Stage 1 — ingest: a `chat.turns` record → validate, trigger, extract, policy → candidates.

Outputs: `memory.candidates` (each fact, and the episode the turn closes; or the command the
turn said — forget, "don't remember this" — in turn order with the facts; one record per user
per batch, `topics.candidates`), `memory.events` (kind=candidate), `memory.progress` (what
became of the turn) and `chat.turns.dlq` for bad records.

Run by `agents/ingest.py` in the worker and by `streams.app.inprocess` without Kafka.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal, TypeVar

from streams.settings import ConsentSettings, EpisodicSettings, InputSettings, Settings, WriteSettings
from streams.errors import InvalidRecord
from streams.memory import applied, consent, ids
from streams.memory.tables import Table, thread_key, turn_key, user_day_key
from streams.memory.users import blocked_topics
from streams.observability import metrics
from streams.observability.logs import describe_failure
from streams.pipeline.outputs import Outputs
from streams.pipeline.records import Record, RecordScope, StageClock, no_scope
from streams.pipeline.retries import RetryPolicy, StageRetries
from streams.privacy.placement import check_routed
from streams.privacy.user_keys import UserKeys
from streams.providers.embedders import Embed
from streams.guarded.llm import GuardedLLM
from streams.write import policy
from streams.write.contextual import FactTexts, TextVectors, context_of, fact_vectors
from streams.write.episodic import Observed, buffered_turn, observe, rules_from
from streams.write.facts import Asked, FactPipeline, TurnFacts, candidates_of, hot_command
from streams.write.write_policy import BLOCKED_TOPIC, count
from streams.write.trigger import CommandKind, ExplicitCommand
from streams.write.validation import parse_turn
from topics.candidates import Candidate, CandidateItem, ChatCommand
from topics.events import MemoryEvent
from topics.progress import Outcome, TurnProgress
from topics.turns import Turn

log = logging.getLogger(__name__)
STAGE = "ingest"
HOT_COMMANDS = (CommandKind.forget, CommandKind.dont_remember)
TURN_CARRIED = "turn"
"""The name under which a turn's `turn_log` record names the turn its buffer write adds
(`streams.memory.applied.change_naming`): the text is in the turn, which a replay has at hand."""
T = TypeVar("T")


def wall_clock() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class IngestTables:
    """The state ingest keeps, co-partitioned with the memory tables by user_id."""

    buffers: Table
    """[user, thread] -> the thread's last turns (secrets redacted) and episodic state;
    [user] -> the user's episodes of the day (the daily cap is per user)."""
    turn_log: Table
    """[user, thread, turn] -> {episode, refs}: what ingest decided for the turn, so a
    replay of it decides the same however far back it is."""
    users: Table
    """user_id -> {blocked_topics, …} (written by the commands stage)."""
    keys: UserKeys
    """The users' data keys: when a user was purged."""
    flush: Callable[[], object] = lambda: None
    """Make the writes held for the batch (`streams.pipeline.write_cache`); called as it ends."""


@dataclass
class TurnPlan:
    """What ingest decided for one turn, before anything is sent."""

    turn: Turn
    clock: StageClock
    outcome: Outcome = "skipped"
    """disabled | command | candidates | skipped"""
    candidates: list[Candidate] = field(default_factory=list)
    command: ExplicitCommand | None = None
    consent: Literal["accept", "reject"] | None = None
    """A short answer to a consent proposal ("yes, update it"), `streams.memory.consent`."""

    def fact_texts(self) -> list[FactTexts]:
        """What each candidate's vectors are made of (`streams.write.contextual`)."""
        return [FactTexts.of(c) for c in self.candidates]


@dataclass
class HeldCandidates:
    """The `memory.candidates` items of a batch, by user, in turn order, each as its JSON with
    the record and turn it came from: sent when the batch ends, one record per user
    (`Outputs.candidates`). An item is written out when it is held, so one that cannot be
    fails its own turn only."""

    items: dict[str, list[tuple[Record, Turn, bytes]]] = field(default_factory=dict)

    def holder(self, record: Record, turn: Turn) -> Callable[[CandidateItem], None]:
        """What holds the items of `turn` (from `record`)."""
        def hold(item: CandidateItem) -> None:
            self.items.setdefault(turn.user_id, []).append(
                (record, turn, item.model_dump_json().encode()))
        return hold


@dataclass(frozen=True)
class PendingTurn:
    """A turn prepared (its buffer written), waiting for its facts (`IngestStage.prepare`)."""

    plan: TurnPlan
    topics: Sequence[str]
    observed: Observed


@dataclass(frozen=True)
class IngestSettings:
    """The sections of the settings the ingest stage reads."""

    input: InputSettings
    write: WriteSettings
    episodic: EpisodicSettings
    consent: ConsentSettings

    @classmethod
    def of(cls, settings: Settings) -> IngestSettings:
        return cls(settings.input, settings.write, settings.episodic, settings.consent)


class IngestStage:
    """Turns in, candidates (or a hot-path command) out."""

    def __init__(self, settings: IngestSettings, tables: IngestTables, llm: GuardedLLM,
                 outputs: Outputs, now: Callable[[], datetime] = wall_clock,
                 embed: Embed | None = None, record_scope: RecordScope = no_scope,
                 vectors: TextVectors | None = None) -> None:
        """`now` is the worker's clock, used only to refuse turns dated too far ahead; `embed`,
        when given, embeds the candidates' texts here into `vectors` (the worker's, shared with
        dedup; by default the stage's own); `record_scope` is the scope each record's table
        writes and sends are made in. A record whose work fails is retried as the input settings
        say (`streams.pipeline.retries`)."""
        self.settings = settings
        self.retries = StageRetries(STAGE, RetryPolicy.of(settings.input))
        self.embed = embed
        self.vectors = vectors if vectors is not None else TextVectors()
        self.record_scope = record_scope
        self.now = now
        self.tables = tables
        self.llm = llm
        self.outputs = outputs
        self.facts = FactPipeline(settings.write)
        self.episodes = rules_from(settings.episodic, settings.write)

    @property
    def asks_llm(self) -> bool:
        """Whether a turn's facts wait for the model here; deferred, ingest keeps to the rules
        and the enrich stage asks later (`streams.pipeline.enrich`)."""
        return self.llm.provider is not None and not self.llm.defers_extraction

    async def with_vectors(self, plans: Sequence[TurnPlan]) -> None:
        """Embed every text of the plans' candidates once, in one model call, into the worker's
        `TextVectors`: the summaries, and for a fact of one turn the turns its context is made
        of (`streams.write.contextual`). A candidate carries those texts, not vectors; dedup
        finds the vectors there. The model runs off the event loop, so in a worker it embeds
        these facts while dedup applies earlier ones: the two costs overlap instead of adding
        up. On a failure dedup embeds them."""
        texts = [t for plan in plans for t in plan.fact_texts()]
        if self.embed is None or not texts:
            return
        try:
            await fact_vectors(texts, self.embed, self.vectors)
        except Exception as exc:  # noqa: BLE001 - dedup embeds what ingest could not
            metrics.STAGE_ERRORS.labels(stage=STAGE, error=type(exc).__name__).inc()
            log.warning("ingest could not embed candidates, dedup will: %s", describe_failure(exc))

    async def handle(self, record: Record) -> int:
        """Process one raw record; return the facts emitted (see `handle_batch`)."""
        return (await self.handle_batch([record]))[0]

    async def handle_batch(self, records: Sequence[Record]) -> list[int]:
        """Process records in order; return the facts emitted by each.

        Each turn is decided first (trigger, extraction, policy, its thread's buffer; with an
        LLM the questions about the batch's turns are asked together, a thread's turns in one
        call: `_plans_asking_together`), then the
        candidates of the whole batch are embedded in one model call, then each turn is sent,
        in turn order: its candidates are held and go out as the batch ends, in one record per
        user (`HeldCandidates`), then its events, one record per user, and the progress last,
        one record per user too (`Outputs.held_per_batch`). Never raises: a bad record is
        dead-lettered (`chat.turns.dlq`) and the others go on; a record whose work fails for
        any other reason is retried, the partition waiting (`streams.pipeline.retries`).
        """
        started = time.perf_counter()
        metrics.STAGE_RECORDS.labels(stage=STAGE).inc(len(records))
        plans: list[TurnPlan | None] = []
        if self.asks_llm and len(records) > 1:
            plans = await self._plans_asking_together(records)
        else:
            for record in records:
                with self.record_scope(record):
                    plans.append(await self._guarded(record, lambda: self._plan(record)))
                # Deciding a turn is CPU work on the event loop: let dedup apply a candidate (and
                # the web routes answer) between two turns, rather than after the whole batch.
                await asyncio.sleep(0)
        await self.with_vectors([plan for plan in plans if plan is not None])
        held = HeldCandidates()
        async with self.outputs.held_per_batch(STAGE):
            emitted = []
            decided: list[tuple[Record, TurnPlan]] = []
            for record, plan in zip(records, plans):
                if plan is None:
                    emitted.append(0)
                    continue
                with self.record_scope(record):
                    sent = await self._guarded(record, lambda: self._send_once(plan))
                if sent is not None:
                    hold = held.holder(record, plan.turn)
                    for item in sent[1]:
                        hold(item)
                emitted.append(sent[0] if sent is not None else 0)
                if sent is not None:
                    decided.append((record, plan))
            self.tables.flush()
            dead = await self._send_held(held)
        for record, plan in decided:  # a dead-lettered turn was counted as `dlq` already
            if plan.outcome != "disabled" and id(record) not in dead:
                metrics.TURNS.labels(outcome=plan.outcome).inc()
        metrics.STAGE_SECONDS.labels(stage=STAGE).observe(
            (time.perf_counter() - started) / max(len(records), 1))
        return emitted

    async def _send_held(self, held: HeldCandidates) -> set[int]:
        """Send each user's held items (`Outputs.candidates`). When a user's cannot be sent,
        the turns they came from are dead-lettered, and their progress says so (`dlq`), so a
        caller waiting on them is not left waiting for facts that never come. Returns the
        `id` of each record dead-lettered."""
        dead: set[int] = set()
        for user_id, items in held.items.items():
            values = [item for _, _, item in items]
            try:
                await self.retries.run(f"the candidates of {len(values)} turn(s)",
                                       lambda: self.outputs.candidates(user_id, values))
            except Exception as exc:  # noqa: BLE001 - a bug past its retries (STAGE_ON_BUG=dead_letter)
                metrics.STAGE_ERRORS.labels(stage=STAGE, error=type(exc).__name__).inc()
                turns = {record.offset: (record, turn) for record, turn, _ in items}
                log.error("ingest could not send the candidates of %d turn(s): %s", len(turns),
                          describe_failure(exc))
                for record, turn in turns.values():
                    dead.add(id(record))
                    await self._dead_letter(record, "internal_error", type(exc).__name__)
                    await self.outputs.progress(self._progress(turn, "dlq"))
        return dead

    async def _guarded(self, record: Record, work: Callable[[], Awaitable[T]]) -> T | None:
        """`work()`'s result, retried while it fails for a reason other than the record
        (`streams.pipeline.retries`); or None once `record` is dead-lettered: at once for what is
        wrong with it (`InvalidRecord`), after its retries for a bug with STAGE_ON_BUG=dead_letter."""
        try:
            return await self.retries.run(f"{record.topic}[{record.partition}]@{record.offset}", work)
        except InvalidRecord as exc:
            await self._dead_letter(record, exc.reason, exc.detail)
        except Exception as exc:  # noqa: BLE001 - a bug past its retries, as configured
            metrics.STAGE_ERRORS.labels(stage=STAGE, error=type(exc).__name__).inc()
            log.error("ingest failed on %s[%d]@%d: %s", record.topic, record.partition,
                      record.offset, describe_failure(exc))
            await self._dead_letter(record, "internal_error", type(exc).__name__)
        return None

    async def _plan(self, record: Record) -> TurnPlan:
        clock = StageClock.start(record, STAGE)
        return await self.decide(self.parse(record), clock)

    def parse(self, record: Record) -> Turn:
        """The record's turn; raises `InvalidRecord` (a turn dated too far ahead included)."""
        settings = self.settings
        turn = parse_turn(record.value, record.key, max_bytes=settings.input.max_record_bytes,
                          max_chars=settings.input.max_turn_chars)
        ahead = (turn.ts - self.now()).total_seconds()
        if ahead > settings.input.max_future_skew_seconds:
            raise InvalidRecord("future_event_time",
                                f"ts is {ahead:.0f} s ahead (limit {settings.input.max_future_skew_seconds} s)")
        check_routed(turn.user_id)  # a turn on another partition would split the user's key
        if self.tables.keys.predates_purge(turn.user_id, turn.ts, record.timestamp):
            # A replay of what the user had memstream forget, or a turn still in flight when the
            # purge took effect: never stored again (docs/architecture.md#bad-input, docs/privacy.md).
            raise InvalidRecord("purged_user", "the turn is from before the user's purge")
        return turn

    async def decide(self, turn: Turn, clock: StageClock) -> TurnPlan:
        """What one valid turn gives (trigger, extraction, policy), its thread's buffer
        updated; nothing is sent yet."""
        prepared = self.prepare(turn, clock)
        if isinstance(prepared, TurnPlan):
            return prepared
        if not self.asks_llm:
            result = self.facts.facts(turn, prepared.topics, prepared.observed.context)
        else:
            result = await self.facts.afacts(turn, prepared.topics, self.llm, prepared.observed.context)
        return self.settle(prepared, result)

    def prepare(self, turn: Turn, clock: StageClock) -> TurnPlan | PendingTurn:
        """`decide` up to the turn's facts: the plan when it is decided without them (memory
        off, an answer to a consent proposal), else what its facts are to be found with; the
        thread's buffer is updated either way."""
        plan = TurnPlan(turn, clock)
        if not self.settings.write.memory_enabled:
            plan.outcome = "disabled"
            return plan
        topics = blocked_topics(self.tables.users, turn.user_id)
        observed = self.observe_turn(turn, topics)
        if (ack := self.consent_ack(turn)) is not None:  # "yes, update it" after a proposal
            plan.outcome, plan.consent = "command", ack
            return plan
        return PendingTurn(plan, topics, observed)

    def settle(self, pending: PendingTurn, result: TurnFacts) -> TurnPlan:
        """`decide` from the turn's facts on: the policy's counts, a hot command, the episode
        the turn closes, the candidates."""
        plan, turn, observed = pending.plan, pending.plan.turn, pending.observed
        for reason in result.blocked:
            metrics.POLICY_BLOCKS.labels(reason=reason).inc()
        if result.command is not None and result.command.kind in HOT_COMMANDS:
            plan.outcome, plan.command = "command", result.command
            return plan
        episode = observed.episode if self.settings.write.episodic_enabled else None
        # The episode was made of what the write policy admits of its window (`observe_turn`);
        # its summary passes the policy too (a topic blocked since a replayed turn closed it).
        if episode is not None and (why := self.facts.policy.refusal(episode.summary, pending.topics)):
            count(why)
            metrics.EPISODIC_SKIPS.labels(reason=BLOCKED_TOPIC if why == BLOCKED_TOPIC else "policy").inc()
            episode = None
        plan.candidates = candidates_of(turn, result, episode, observed.refs,
                                        context_of(turn, observed.entry["turns"]))
        plan.outcome = "candidates" if plan.candidates else "skipped"
        return plan

    async def _plans_asking_together(self, records: Sequence[Record]) -> list[TurnPlan | None]:
        """The plans of `records` with the LLM's questions about them asked together
        (`FactPipeline.afacts_many`: a thread's turns in one call), not a call a turn: each
        record prepared in order (its buffer written before the next is read), then the facts
        of all, then each settled. A record that fails is retried or dead-lettered alone, as in
        `_plan`; should the questions asked together fail (a bug), each turn is asked alone."""
        prepared: list[TurnPlan | PendingTurn | None] = []
        for record in records:
            with self.record_scope(record):
                prepared.append(await self._guarded(record, lambda: self._prepare(record)))
            await asyncio.sleep(0)  # as in handle_batch: let other stages run between turns
        pending = [(i, p) for i, p in enumerate(prepared) if isinstance(p, PendingTurn)]
        try:
            results: list[TurnFacts | None] = list(await self.facts.afacts_many(
                [Asked(p.plan.turn, p.topics, p.observed.context) for _, p in pending], self.llm))
        except Exception as exc:  # noqa: BLE001 - asked alone below, where a failure is the turn's
            metrics.STAGE_ERRORS.labels(stage=STAGE, error=type(exc).__name__).inc()
            log.warning("ingest could not ask about %d turns together, asking alone: %s",
                        len(pending), describe_failure(exc))
            results = [None] * len(pending)
        plans: list[TurnPlan | None] = [p if isinstance(p, TurnPlan) else None for p in prepared]
        for (i, item), result in zip(pending, results):
            with self.record_scope(records[i]):
                plans[i] = await self._guarded(records[i], lambda: self._settle(item, result))
        return plans

    async def _prepare(self, record: Record) -> TurnPlan | PendingTurn:
        return self.prepare(self.parse(record), StageClock.start(record, STAGE))

    async def _settle(self, pending: PendingTurn, result: TurnFacts | None) -> TurnPlan:
        if result is None:
            turn = pending.plan.turn
            result = await self.facts.afacts(turn, pending.topics, self.llm, pending.observed.context)
        return self.settle(pending, result)

    async def _send_once(self, plan: TurnPlan) -> tuple[int, list[CandidateItem]]:
        """`_send` with the items it holds collected, so that a retried attempt holds each once."""
        items: list[CandidateItem] = []
        return await self._send(plan, items.append), items

    async def _send(self, plan: TurnPlan, hold: Callable[[CandidateItem], None]) -> int:
        """Send what a turn gave: its candidates' events, its candidates or its command to
        `hold` (sent as the batch ends), and its progress entry; return the facts emitted."""
        turn, clock = plan.turn, plan.clock
        if plan.outcome == "disabled":
            await self.outputs.progress(clock.stamp(self._progress(turn, "disabled")))
            return 0
        if plan.command is not None:
            await self.send_hot_command(turn, plan.command, clock, hold)
            return 0
        if plan.consent is not None:  # on memory.candidates, behind the proposal it answers
            hold(ChatCommand(command=consent.acknowledgement_command(turn, plan.consent)))
            await self.outputs.progress(clock.stamp(self._progress(turn, "command", fact_count=1)))
            return 0
        if not plan.candidates:
            await self.outputs.progress(clock.stamp(self._progress(turn, "skipped")))
            return 0
        await self.send_candidates(plan, hold)
        await self.outputs.progress(clock.stamp(
            self._progress(turn, "candidates", len(plan.candidates))))
        return len(plan.candidates)

    async def send_candidates(self, plan: TurnPlan, hold: Callable[[CandidateItem], None]) -> None:
        """Each of the plan's candidates: its `candidate` event, and the candidate to `hold`."""
        turn = plan.turn
        for candidate in plan.candidates:
            fact, confidence = candidate.fact, candidate.confidence
            memory_id = ids.memory_id(turn.user_id, turn.thread_id, turn.turn_id, candidate.fact_index)
            metrics.CANDIDATES.labels(type=fact.type).inc()
            await self.outputs.event(MemoryEvent(
                event_id=ids.event_id(memory_id, "candidate", 0), kind="candidate",
                user_id=turn.user_id, thread_id=turn.thread_id, memory_id=memory_id, rev=0,
                ts=turn.ts, summary=fact.summary, category=fact.category,
                meta={"type": fact.type, "source_turn_id": turn.ref, "confidence": confidence},
            ))
            hold(candidate)

    def consent_ack(self, turn: Turn) -> Literal["accept", "reject"] | None:
        """A short answer to a consent proposal said in chat (`streams.memory.consent`); the
        dedup stage applies it to the thread's proposal, if one was just made."""
        return consent.acknowledgement(turn) if self.settings.consent.consent_enabled else None

    def observe_turn(self, turn: Turn, topics: Sequence[str] = ()) -> Observed:
        """Add the turn to its thread's buffer (secrets redacted) and see if it closes an episode,
        made of what the write policy admits of the window (`WritePolicy.clean`, with the
        user's blocked `topics`)."""
        key = thread_key(turn.user_id, turn.thread_id)
        logged = turn_key(turn.user_id, turn.thread_id, turn.turn_id)
        day_key = user_day_key(turn.user_id)
        seen = self.tables.turn_log.get(logged)
        buffer = self.tables.buffers.get(key)
        user_day = self.tables.buffers.get(day_key) or {}
        observed = observe(buffer, turn, self.episodes, self.settings.episodic.episodic_window_n,
                           policy.redact, seen, user_day,
                           admit=lambda texts: self.facts.policy.clean(texts, topics))
        if seen is None:
            # The turn's record lists the buffer writes, and is made first: a replay makes the
            # writes again if the worker was killed before them, or if a recovery rolled them back.
            # The turn it adds is named, not repeated: its replay has the turn at hand.
            buffered = {TURN_CARRIED: observed.entry["turns"][-1]}
            record = {**observed.record,
                      "buffer_write": applied.change_naming(buffer, observed.entry, buffered)}
            if observed.user_day is not None:
                record["user_day_write"] = applied.change(user_day or None, observed.user_day)
            self.tables.turn_log[logged] = record
            self.tables.buffers[key] = observed.entry
            if observed.user_day is not None:
                self.tables.buffers[day_key] = observed.user_day
        else:
            if "buffer_write" in seen:
                applied.redo_naming(self.tables.buffers, key, seen["buffer_write"],
                                    {TURN_CARRIED: buffered_turn(turn, policy.redact)}, "buffers")
            if "user_day_write" in seen:
                applied.redo_change(self.tables.buffers, day_key, seen["user_day_write"])
        return observed

    async def send_hot_command(self, turn: Turn, command: ExplicitCommand, clock: StageClock,
                               hold: Callable[[CandidateItem], None]) -> None:
        """An explicit forget / "don't remember this" goes on `memory.candidates` (to `hold`),
        behind the facts of the turns before it: the dedup stage applies it in turn order.

        The turn counts as done when that stage reports it applied (its progress record), so its
        events are out before the turn is finished.
        """
        hold(ChatCommand(command=hot_command(turn, command)))
        await self.outputs.progress(clock.stamp(self._progress(turn, "command", fact_count=1)))

    @staticmethod
    def _progress(turn: Turn, outcome: Outcome, fact_count: int = 0) -> TurnProgress:
        return TurnProgress(
            user_id=turn.user_id, thread_id=turn.thread_id, turn_id=turn.turn_id, stage=STAGE,
            outcome=outcome, fact_count=fact_count,
        )

    async def _dead_letter(self, record: Record, reason: str, detail: str) -> None:
        metrics.TURNS.labels(outcome="dlq").inc()
        await self.outputs.dead_letter(record, STAGE, reason, detail)
