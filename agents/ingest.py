"""Stage 1 — ingest: validate a turn, trigger, extract facts, apply the policy filter.

Input `chat.turns` (raw bytes). Outputs: `memory.candidates` (one per fact),
`memory.events` (kind=candidate), `memory.progress`, and `chat.turns.dlq` for bad records.
"""
from __future__ import annotations

import logging
import time

from faust.types import EventT

import streams.observability.consumer_lag  # noqa: F401 - registers the worker's consumer-lag timer
from streams.memory import ids
from streams.observability import metrics
from streams.write import policy
from streams.app.factory import (
    app,
    buffers_table,
    settings,
    turn_log_table,
    turns_topic,
    users_table,
)
from streams.write.episodic import Observed, observe, rules_from
from streams.errors import InvalidRecord
from streams.write.facts import FactPipeline, candidates_of, hot_command, mentions_topic
from streams.pipeline.outputs import (
    send_candidate,
    send_command,
    send_dead_letter,
    send_event,
    send_progress,
)
from streams.app.services import get_llm
from streams.write.trigger import CommandKind, ExplicitCommand
from streams.write.validation import parse_turn
from topics.dlq import DeadLetter
from topics.events import MemoryEvent
from topics.progress import TurnProgress
from topics.turns import Turn

log = logging.getLogger(__name__)
STAGE = "ingest"

fact_pipeline = FactPipeline(settings)
llm = get_llm()  # logs once when no LLM is configured: rules


EPISODES = rules_from(settings)


def observe_turn(turn: Turn) -> Observed:
    """Add the turn to its thread's buffer (secrets redacted) and see if it closes an episode."""
    key, turn_key = f"{turn.user_id}|{turn.thread_id}", f"{turn.user_id}|{turn.ref}"
    seen = turn_log_table.get(turn_key)
    observed = observe(buffers_table.get(key), turn, EPISODES, settings.episodic_window_n,
                       policy.redact, seen)
    if seen is None:
        buffers_table[key] = observed.entry
        turn_log_table[turn_key] = observed.record
    return observed


def blocked_topics(user_id: str) -> list[str]:
    """The user's blocked topics (written by the commands stage; same partition)."""
    return list((users_table.get(user_id) or {}).get("blocked_topics", []))


def _progress(turn: Turn, outcome: str, fact_count: int = 0) -> TurnProgress:
    return TurnProgress(
        user_id=turn.user_id, thread_id=turn.thread_id, turn_id=turn.turn_id, stage=STAGE,
        outcome=outcome, fact_count=fact_count,  # type: ignore[arg-type]
    )


async def send_hot_command(turn: Turn, command: ExplicitCommand) -> None:
    """An explicit forget / "don't remember this" goes to the commands stage at once.

    The turn counts as done when that stage reports it applied (its progress record), so its
    events are out before the turn is finished.
    """
    await send_command(hot_command(turn, command))
    await send_progress(_progress(turn, "command", fact_count=1))


async def process_turn(turn: Turn) -> int:
    """Run one valid turn through trigger, extraction and policy; return facts emitted."""
    if not settings.memory_enabled:
        await send_progress(_progress(turn, "disabled"))
        return 0
    topics = blocked_topics(turn.user_id)
    observed = observe_turn(turn)
    if llm.provider is None:
        result = fact_pipeline.facts(turn, topics)
    else:
        result = await fact_pipeline.afacts(turn, topics, llm, observed.context)
    for reason in result.blocked:
        metrics.POLICY_BLOCKS.labels(reason=reason).inc()
    if result.command is not None and result.command.kind in (CommandKind.forget, CommandKind.dont_remember):
        metrics.TURNS.labels(outcome="command").inc()
        await send_hot_command(turn, result.command)
        return 0
    episode = observed.episode if settings.episodic_enabled else None
    if episode is not None and mentions_topic(episode.summary, topics):
        metrics.EPISODIC_SKIPS.labels(reason="blocked_topic").inc()
        episode = None
    candidates = candidates_of(turn, result, episode, observed.refs)
    if not candidates:
        metrics.TURNS.labels(outcome="skipped").inc()
        await send_progress(_progress(turn, "skipped"))
        return 0
    metrics.TURNS.labels(outcome="candidates").inc()
    for candidate in candidates:
        fact, confidence = candidate.fact, candidate.confidence
        memory_id = ids.memory_id(turn.user_id, turn.ref, candidate.fact_index)
        metrics.CANDIDATES.labels(type=fact.type).inc()
        await send_event(
            MemoryEvent(
                event_id=ids.event_id(memory_id, "candidate", 0), kind="candidate",
                user_id=turn.user_id, thread_id=turn.thread_id, memory_id=memory_id, rev=0,
                ts=turn.ts, summary=fact.summary, category=fact.category,
                meta={"type": fact.type, "source_turn_id": turn.ref, "confidence": confidence},
            )
        )
        await send_candidate(candidate)
    return len(candidates)


async def handle_record(event: EventT) -> int:
    """Process one raw record; return facts emitted. Any failure dead-letters the record."""
    message = event.message
    started = time.perf_counter()
    metrics.STAGE_RECORDS.labels(stage=STAGE).inc()
    try:
        turn = parse_turn(
            event.value, message.key, max_bytes=settings.max_record_bytes,
            max_chars=settings.max_turn_chars,
        )
    except InvalidRecord as exc:
        await _dead_letter(event, exc.reason, exc.detail)
        return 0
    try:
        return await process_turn(turn)
    except Exception as exc:  # noqa: BLE001 - a bug must not stop the partition
        log.exception("ingest failed on %s", turn.ref)
        await _dead_letter(event, "internal_error", type(exc).__name__)
        return 0
    finally:
        metrics.STAGE_SECONDS.labels(stage=STAGE).observe(time.perf_counter() - started)


async def _dead_letter(event: EventT, reason: str, detail: str) -> None:
    message = event.message
    metrics.TURNS.labels(outcome="dlq").inc()
    letter = DeadLetter.wrap(
        stage=STAGE, reason=reason, error=detail, topic=message.topic, partition=message.partition,
        offset=message.offset, key=message.key, raw=event.value or b"",
    )
    await send_dead_letter(letter, message.key)


@app.agent(turns_topic, name="ingest")
async def ingest(stream):  # type: ignore[no-untyped-def]
    """Consume `chat.turns`; yields facts emitted per record (lets `test_context().put` await it)."""
    async for event in stream.events():
        yield await handle_record(event)
