"""The worker's stages in this process, without Kafka: `bench locomo --offline`, quality tools.

Topics become FIFO queues (`LocalTopics`) and tables become dicts; the stages are the very
objects the worker's agents run (`IngestStage`, `DedupStage`, `CommandsStage`: the stages
`streams.app.topology.IN_PROCESS` declares), built from the same kit as the worker's
(`streams.app.stage_kit`) and fed the same raw records. `LocalTopics.deliver` decides the order
in which queued records reach them:

- turns are ingested in the order they were sent, each as soon as it is delivered;
- candidates are applied in batches of `DEDUP_BATCH_SIZE` (embedded in one model call), as the
  dedup agent takes them from a backlog;
- a command waits for every candidate sent before it (the order of a worker that keeps up), or,
  with `commands_first`, overtakes the candidates still queued (a worker with a candidate
  backlog: `memory.commands` and `memory.candidates` are separate topics, consumed
  independently).

The scenario suite (`tests/scenarios`) uses the same queues to route records between the real
Faust agents.
"""
from __future__ import annotations

import time
from datetime import datetime
from collections import Counter, defaultdict, deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from streams.app.services import Services
from streams.settings import Settings
from streams.app.stage_kit import NO_LISTENERS, build_stage_kit
from streams.app.topology import DLQ_OF, IN_PROCESS, stage_named
from streams.lifecycle.passes import LifecyclePass
from streams.memory.access import touch
from streams.pipeline.commands import CommandsStage
from streams.pipeline.dedup import DedupStage
from streams.pipeline.enrich import EnrichStage
from streams.pipeline.ingest import IngestStage
from streams.pipeline.records import Record
from streams.privacy.crypto import master_key_of, new_key
from streams.privacy.payloads import open_events
from streams.privacy.sealed import TABLE_OWNERS
from streams.guarded.llm import GuardedLLM
from streams.providers.embedders import Embedder
from streams.read import ranking
from streams.read.fusion import Retrieval
from streams.read.categories import load_policy
from streams.read.query import QueryHit, QueryLimits, execute, plan_query
from streams.read.token_budget import get_counter
from topics import names
from topics.events import MemoryEvent
from topics.events_wire import events_of
from topics.progress import parse_progress
from topics.query import QueryRequest
from topics.turns import Turn


@dataclass(frozen=True)
class Consumers:
    """Who consumes each input topic: one turn, a batch of candidates, one command."""

    turn: Callable[[Record], Awaitable[Any]]
    candidates: Callable[[list[Record]], Awaitable[Any]]
    command: Callable[[Record], Awaitable[Any]]


class LocalTopics:
    """Records sent in process: queued per input topic, and logged per topic in send order."""

    INPUTS = tuple(stage.reads for stage in IN_PROCESS)

    def __init__(self) -> None:
        self.queues: dict[str, deque[Record]] = {topic: deque() for topic in self.INPUTS}
        self.sent: dict[str, list[Record]] = defaultdict(list)
        self._offsets: Counter[str] = Counter()

    async def send(self, topic: str, key: bytes | None, value: bytes) -> None:
        """A `streams.pipeline.outputs.Sender`."""
        record = Record(topic, 0, self._offsets[topic], key, value, time.time())
        self._offsets[topic] += 1
        self.sent[topic].append(record)
        if topic in self.queues:
            self.queues[topic].append(record)

    def pending(self) -> int:
        return sum(len(q) for q in self.queues.values())

    async def deliver(self, consumers: Consumers, *, batch: int, flush: bool = True,
                      commands_first: bool = False) -> None:
        """Hand queued records to `consumers` in the order of the module doc, until nothing
        can go: without `flush`, a partial batch of candidates waits for more."""
        turns = self.queues[names.CHAT_TURNS]
        candidates = self.queues[names.MEMORY_CANDIDATES]
        commands = self.queues[names.MEMORY_COMMANDS]
        while True:
            if turns:
                await consumers.turn(turns.popleft())
            elif commands and (commands_first or not candidates):
                await consumers.command(commands.popleft())
            elif candidates and (flush or commands or len(candidates) >= batch):
                await consumers.candidates([candidates.popleft()
                                            for _ in range(min(batch, len(candidates)))])
            else:
                return


def _turn_time(record: Record) -> datetime | None:
    """When the turn of a `chat.turns` record was said (None for a record that is no turn)."""
    try:
        return Turn.model_validate_json(record.value or b"").ts
    except ValueError:
        return None


class InProcessPipeline:
    """Turns in, memories in dicts, queries answered — the worker's stages, in this process."""

    def __init__(self, settings: Settings, embedder: Embedder,
                 passes: Sequence[LifecyclePass] = (), llm: GuardedLLM | None = None) -> None:
        """`passes`: lifecycle passes besides the service's own (`service_passes`); `llm`: the
        model's questions (by default the settings')."""
        self.settings = settings
        self.topics = LocalTopics()
        self.services = Services(settings, embedder=embedder, llm=llm)
        self.raw_tables: dict[str, dict[Any, Any]] = {name: {} for name in TABLE_OWNERS}
        self.lifecycle_table: dict[Any, Any] = {}
        kit = build_stage_kit(settings, self.services, self.raw_tables, {}, self.lifecycle_table,
                              master_key_of(settings.privacy) or new_key(), self.topics.send,
                              dlq_of=DLQ_OF, passes=passes)
        self.sealed, self.outputs, self.store, self.lifecycle = (
            kit.sealed, kit.outputs, kit.store, kit.lifecycle)
        self.tables = self.sealed.memory
        stages = {stage.name: stage.build(kit, NO_LISTENERS) for stage in IN_PROCESS}
        self.ingest_stage: IngestStage = stages["ingest"]
        self.dedup_stage: DedupStage = stages["dedup"]
        self.commands_stage: CommandsStage = stages["commands"]
        self.enrich_stage: EnrichStage | None = (
            stage_named("enrich").build(kit, NO_LISTENERS) if self.services.llm.defers_extraction else None)
        self.enrich_window: list[Record] = []
        """Turns ingested and not yet asked about (`streams.pipeline.enrich`): a window is
        asked once it spans `LLM_WINDOW_SECONDS` of the turns' own time, or holds
        `LLM_WINDOW_TURNS`, and whatever is left when the turns are all delivered."""
        self._window_span: tuple[datetime, datetime] | None = None
        """The earliest and the latest time of the window's turns."""
        self.consumers = Consumers(self._turn, self.dedup_stage.handle_batch,
                                   self.commands_stage.handle)
        self.weights = ranking.weights_of(settings.read)
        self.policy = load_policy(settings.read.categories_path)

    async def _turn(self, record: Record) -> None:
        await self.ingest_records([record])

    async def ingest_records(self, records: list[Record]) -> None:
        """Hand `records` (of `chat.turns`) to ingest as one batch, then to the enrich window."""
        if len(records) == 1:
            await self.ingest_stage.handle(records[0])
        else:
            await self.ingest_stage.handle_batch(records)
        if self.enrich_stage is None:
            return
        self.enrich_window.extend(records)
        for ts in filter(None, map(_turn_time, records)):
            first, last = self._window_span or (ts, ts)
            self._window_span = (min(first, ts), max(last, ts))
        llm = self.settings.llm
        span = self._window_span
        spanned = span is not None and (span[1] - span[0]).total_seconds() >= llm.llm_window_seconds
        if spanned or len(self.enrich_window) >= llm.llm_window_turns:
            await self._enrich()

    async def _enrich(self) -> None:
        window, self.enrich_window, self._window_span = self.enrich_window, [], None
        if window and self.enrich_stage is not None:
            await self.enrich_stage.handle_batch(window)

    async def send_turn(self, turn: Turn) -> None:
        await self.topics.send(names.CHAT_TURNS, turn.user_id.encode(), turn.model_dump_json().encode())

    async def ingest(self, turns: Iterable[Turn]) -> None:
        """Send `turns` one at a time and process what each produces; candidates are applied in
        full batches, and whatever is left at the end."""
        for turn in turns:
            await self.send_turn(turn)
            await self.deliver(flush=False)
        await self.deliver()

    async def deliver(self, flush: bool = True, commands_first: bool = False) -> None:
        """Deliver what is queued (`LocalTopics.deliver`); with `flush`, the enrich window's
        turns are asked about too, and what that sends delivered."""
        while True:
            await self.topics.deliver(self.consumers, batch=self.settings.dedup.dedup_batch_size,
                                      flush=flush, commands_first=commands_first)
            if not (flush and self.enrich_window):
                return
            await self._enrich()

    def sent_events(self) -> list[MemoryEvent]:
        """Every memory event the stages sent so far, in order, opened (`open_events`)."""
        return [event for record in self.topics.sent[names.MEMORY_EVENTS]
                for event in open_events(self.sealed.sealer, events_of(record.value))]

    def outcomes(self) -> Counter[str]:
        """What the dedup stage did with every candidate so far (its progress records)."""
        progress = (p for r in self.topics.sent[names.MEMORY_PROGRESS]
                    for p in parse_progress(r.value))
        return Counter(p.outcome for p in progress if p.stage == "dedup")

    async def query(self, user_id: str, text: str, top_k: int, *, agent: str = "supervisor",
                    record_access: bool = False, parts: Sequence[str] | None = None) -> list[QueryHit]:
        """The user's best memories for `text`, answered as the query route answers `agent`
        (`memory.query` in full mode: policy, tiers, ranking); with `record_access`, the read is
        recorded as the route records it (a `touch` command, applied on the next delivery).
        `parts`: the searches the answer needs, given in place of the rules' or the model's
        (`benchmarks.ceilings` gives the evidence turns' texts: what a perfect model could
        name), the question then answered as a combining one."""
        request = QueryRequest(agent=agent, query=text, top_k=top_k, **{"return": "full"})
        clock = self.store.user_clock(user_id)
        plan = plan_query(request, user_id, self.policy, QueryLimits.of(self.settings.read), clock)
        if parts is None:
            plan = await self.services.model_parts.planned(plan)
        else:
            plan = replace(plan, combining=plan.combining or "list", parts=tuple(parts))
        vector = (await self.services.embed([plan.text]))[0]
        _, hits = execute(self.store.index().user(user_id), vector, plan, self.policy,
                          self.weights, get_counter(), retrieval=Retrieval.of(self.settings.read),
                          curve=self.services.score_curve())
        if record_access and hits and clock is not None:
            await self.outputs.command(touch(user_id, [h.memory.id for h in hits], clock, agent))
        return hits
