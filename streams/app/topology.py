"""The worker's topology, declared once: its topics, and its stages — what each reads, writes
and dead-letters, how it batches, and how it is built from what the stages share
(`streams.app.stage_kit.StageKit`).

Derived from it: the dead-letter topic of each input (`DLQ_OF`), the topics created on a broker
(`ALL_TOPICS`, `streams.worker.run_worker`), the worker's Faust topics
(`streams.app.factory.Topics`), its agents (`agents.register_all`), the in-process runner's
inputs and stages (`streams.app.inprocess`), and the topics and stages tables of
docs/architecture.md (`streams.app.topology_docs`). A new stage is one `Stage` here, its
`streams/pipeline/` class and its agent in `agents/`; a new topic one name in `topics/names.py`
and one `Topic` here.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from pydantic import BaseModel

from sinks.routing import configured as sinks_configured
from streams.settings import Settings
from streams.errors import MemstreamError
from streams.app.stage_kit import StageKit, StageListeners
from streams.pipeline.commands import CommandsStage
from streams.pipeline.dedup import DedupStage
from streams.pipeline.enrich import EnrichStage
from streams.pipeline.ingest import IngestSettings, IngestStage
from streams.pipeline.recent_events import RecentEvents
from streams.pipeline.retries import RetryPolicy
from streams.pipeline.sse import SseStage
from streams.proactivity import ProactivityPolicy
from streams.providers.llm.factory import defers_extraction
from streams.language.dates import resolve_dates
from topics import names
from topics.dlq import DeadLetter
from topics.sinks_dlq import SinkDeadLetter


class TopologyError(MemstreamError):
    """A stage used otherwise than it is declared (e.g. consumed in batches with no batching)."""


@dataclass(frozen=True)
class Topic:
    """One topic: its name (`topics/names.py`), what a record holds, and who writes and reads it
    besides the stages (the stages' part is in `STAGES`)."""

    name: str
    value: str
    written_by: str = ""
    read_by: str = ""
    internal: bool = False
    """Only the worker's stages write it."""


TOPICS: tuple[Topic, ...] = (
    Topic(names.CHAT_TURNS, "`Turn`: user, thread, turn id (stable within the thread), role, "
          "optional speaker, text, event time with zone; optional agent, run, actor, time zone, "
          "source (`chat` or `external`), metadata", written_by="the chat backend"),
    Topic(names.CHAT_TURNS_DLQ, "`DeadLetter` ([bad input](#bad-input))", read_by="operators"),
    Topic(names.MEMORY_COMMANDS, "`Command`: forget, pin, edit, delete, restore, purge a user, "
          "block a topic, consent, proactivity feedback, touch (a read), …",
          written_by="the API, the admin page, the chat backend"),
    Topic(names.MEMORY_COMMANDS_DLQ, "`DeadLetter` ([bad input](#bad-input))", read_by="operators"),
    Topic(names.MEMORY_CANDIDATES, "the candidate facts, episodes and commands said in chat "
          "of one user's batch of turns, in order, sealed; a fact carries the texts its "
          "vectors are made of, not the vectors",
          internal=True),
    Topic(names.MEMORY_CANDIDATES_DLQ, "`DeadLetter` ([bad input](#bad-input))",
          read_by="operators"),
    Topic(names.MEMORY_EVENTS, "one `MemoryEvent` a record, JSON of the published schema "
          "(`topics/schemas/memory-event.schema.json`, `topics.events_wire`): a deterministic "
          "`event_id`, its kind (candidate, created, updated, merged, superseded, linked, "
          "soft_deleted, restored, deleted, purged, archived, consolidated, promoted, error), "
          "the memory and the thread revision, event time, sealed content",
          read_by="any consumer"),
    Topic(names.MEMORY_PROGRESS, "what became of each turn at each stage (no content): an "
          "array of `TurnProgress`, one record per user per batch, deflated when that is "
          "shorter (`topics.progress.progress_entries`)",
          read_by="the bench, the LangGraph store's put", internal=True),
    Topic(names.MEMORY_PROACTIVITY, "candidates for reaching out, no content "
          "([proactivity](#proactivity))", read_by="downstream outreach"),
    Topic(names.MEMORY_SINKS_DLQ, "`SinkDeadLetter`: a record a sink gave up on",
          read_by="operators"),
)

ALL_TOPICS: tuple[str, ...] = tuple(topic.name for topic in TOPICS)
"""Every topic's name: what `memstream` creates on a broker, each with `TOPIC_PARTITIONS`."""


@dataclass(frozen=True)
class Batching:
    """How many records a stage takes at once, and how long it waits to fill a batch."""

    size: Callable[[Settings], int]
    within_ms: Callable[[Settings], int]
    setting: str
    """The size's setting (docs)."""


@dataclass(frozen=True)
class Stage:
    """One stage: its input topic, the topics it writes, where the records it refuses go and
    in what schema, how it batches, and how its object is built (`build(kit, listeners)`: one
    with `handle_batch(records)` when it batches, `handle(record)` otherwise).

    `also` says what else it writes (tables, other destinations) and `when` when a worker runs
    it (`enabled`), for the docs.
    """

    name: str
    reads: str
    writes: tuple[str, ...]
    dead_letters: str | None
    build: Callable[[StageKit, StageListeners], Any]
    batching: Batching | None = None
    letter: type[BaseModel] = DeadLetter
    in_process: bool = False
    """Run by the in-process runner (`streams.app.inprocess`) as well as by the worker."""
    warm_up: Callable[[], None] | None = None
    """Run once as the worker starts, so the first record does not pay it."""
    also: str = ""
    when: str = ""
    enabled: Callable[[Settings], bool] = lambda settings: True

    @property
    def agent(self) -> str:
        """The module of its Faust agent."""
        return f"agents/{self.name}.py"


def _ingest(kit: StageKit, listeners: StageListeners) -> IngestStage:
    return IngestStage(IngestSettings.of(kit.settings), kit.sealed.ingest, kit.services.llm, kit.outputs,
                       embed=kit.services.embed, record_scope=kit.record_scope,
                       vectors=kit.services.vectors)


def _enrich(kit: StageKit, listeners: StageListeners) -> EnrichStage:
    return EnrichStage(_ingest(kit, listeners))


def _dedup(kit: StageKit, listeners: StageListeners) -> DedupStage:
    return DedupStage(kit.store, kit.services.embed, kit.services.llm, kit.outputs,
                      record_scope=kit.record_scope, vectors=kit.services.vectors,
                      lifecycle=kit.lifecycle if kit.settings.lifecycle.lifecycle_enabled else None,
                      proactivity=ProactivityPolicy.of(kit.settings.proactivity),
                      retry_policy=RetryPolicy.of(kit.settings.input))


def _commands(kit: StageKit, listeners: StageListeners) -> CommandsStage:
    return CommandsStage(kit.settings.input, kit.store, kit.services.embed, kit.outputs,
                         observer=listeners.commands)


def _sse(kit: StageKit, listeners: StageListeners) -> SseStage:
    return SseStage(RecentEvents(kit.sealed.recent_events, kit.settings.api.sse_replay_events),
                    kit.sealed.sealer, listeners.events, kit.record_scope)


def _built_by_the_agent(kit: StageKit, listeners: StageListeners) -> None:
    """The sinks stage is its agent (`agents/sinks.py`): its acks follow its destinations'
    writes, which a stage object over records cannot express."""
    return None


def _warm_up_dates() -> None:
    """dateparser builds its tables on first use (~0.2 s): pay it as the worker starts, not on
    the first turn that mentions a relative date."""
    resolve_dates("two days ago", date(2000, 1, 1))


STAGES: tuple[Stage, ...] = (
    Stage("ingest", reads=names.CHAT_TURNS,
          writes=(names.MEMORY_CANDIDATES, names.MEMORY_EVENTS, names.MEMORY_PROGRESS),
          dead_letters=names.CHAT_TURNS_DLQ, build=_ingest, in_process=True,
          warm_up=_warm_up_dates,
          batching=Batching(lambda s: s.write.ingest_batch_size, lambda s: s.write.ingest_batch_within_ms,
                            "INGEST_BATCH_SIZE"),
          also="the thread buffers and turn log"),
    Stage("enrich", reads=names.CHAT_TURNS, writes=(names.MEMORY_CANDIDATES, names.MEMORY_EVENTS),
          dead_letters=None, build=_enrich,
          batching=Batching(lambda s: s.llm.llm_window_turns,
                            lambda s: round(s.llm.llm_window_seconds * 1000), "LLM_WINDOW_TURNS"),
          also="asks the model about the turns of a window together; what it adds to the "
               "rules' facts follows as more candidates of the same turns",
          when="only with an LLM in hybrid mode and LLM_EXTRACTION=deferred (the default)",
          enabled=defers_extraction),
    Stage("dedup", reads=names.MEMORY_CANDIDATES,
          writes=(names.MEMORY_EVENTS, names.MEMORY_PROACTIVITY, names.MEMORY_PROGRESS),
          dead_letters=names.MEMORY_CANDIDATES_DLQ, build=_dedup, in_process=True,
          batching=Batching(lambda s: s.dedup.dedup_batch_size, lambda s: s.dedup.dedup_batch_within_ms,
                            "DEDUP_BATCH_SIZE"),
          also="the memory tables; runs the [lifecycle](#lifecycle); a batch is embedded in "
               "one model call"),
    Stage("commands", reads=names.MEMORY_COMMANDS,
          writes=(names.MEMORY_EVENTS, names.MEMORY_PROGRESS),
          dead_letters=names.MEMORY_COMMANDS_DLQ, build=_commands, in_process=True,
          also="the memory tables"),
    Stage("sse", reads=names.MEMORY_EVENTS, writes=(), dead_letters=None, build=_sse,
          batching=Batching(lambda s: s.api.sse_batch_size, lambda s: s.api.sse_batch_within_ms,
                            "SSE_BATCH_SIZE"),
          also="the `recent_events` table; this worker's open event streams"),
    Stage("sinks", reads=names.MEMORY_EVENTS, writes=(), dead_letters=names.MEMORY_SINKS_DLQ,
          build=_built_by_the_agent, letter=SinkDeadLetter,
          also="the destinations MEMORY_STORE names: OpenSearch, S3 Vectors, pgvector, Chroma",
          when="only when a sink is configured",
          enabled=lambda settings: bool(sinks_configured(settings))),
)

IN_PROCESS: tuple[Stage, ...] = tuple(stage for stage in STAGES if stage.in_process)
"""The stages the in-process runner runs: those that turn turns and commands into memories."""

DLQ_OF: dict[str, str] = {stage.reads: stage.dead_letters for stage in STAGES
                          if stage.dead_letters is not None and stage.letter is DeadLetter}
"""The dead-letter topic of each input topic whose stage refuses records as `DeadLetter`s
(`streams.pipeline.outputs.Outputs.dead_letter`)."""


def stage_named(name: str) -> Stage:
    """The stage called `name`."""
    for stage in STAGES:
        if stage.name == name:
            return stage
    raise KeyError(name)
