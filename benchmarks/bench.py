"""`memstream bench locomo`: LoCoMo conversations through the running pipeline, measured.

One run reports, on the same machine: ingest throughput beside the broker's raw
produce->consume rate for the same messages; end-to-end latency (turn produced -> its last
progress record, i.e. its last memory event); candidate latency (turn produced -> the ingest
stage's progress record: its candidates sent, or its skip decided); per-stage queueing and work
time from the progress records; the embedder's own limit (turns/s if embedding the run's
candidates were all the pipeline did); the worker's resident memory per stored memory; query
latency; recall from provenance with the context size; and the same recall for a raw-turn
baseline with the same embedder. Where the time goes: `benchmarks/bench_stages.py`.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import aiohttp
import numpy as np
import orjson
from rich.console import Console
from rich.table import Table

from streams.settings import get_settings
from streams.app.topic_admin import create_topics
from streams.tools.client import ApiClient, TurnProducer, make_consumer, make_producer
from streams.errors import BrokerError
from benchmarks.bench_stages import (
    StageTimes,
    candidate_summaries,
    cpu_report,
    cpu_snapshot,
    dominant_queue,
    embedder_limit,
    latencies_ms,
    metric_value,
    percentiles,
    process_rss,
    rss_report,
    time_embedding,
)
from benchmarks.bench_scale import renamed
from benchmarks.cpu_profiles import render_cpu_profile, start_profiles, stop_profiles
from benchmarks.crossval import QuestionResults, cross_validate
from benchmarks.crossval import render_rows as crossval_rows
from benchmarks.live_chat import (
    Ask,
    end_state,
    live_replay,
    per_conversation,
    recall_summary,
)
from streams.tools.locomo import LocomoConversation, load_conversation
from benchmarks.score_calibration import Point, answered, plot, reliability
from benchmarks.recall import KS, RawTurnBaseline, RecallReport, duplicate_rate
from streams.read.fusion import Retrieval
from streams.tools.stack import (
    Completion,
    Stack,
    TurnKey,
    start_stack,
    turn_partitions,
    wait_ready,
    worker_status,
)
from topics.events import MemoryEvent
from topics.events_wire import events_of
from topics.names import CHAT_TURNS, MEMORY_EVENTS, MEMORY_PROACTIVITY, MEMORY_PROGRESS
from topics.progress import progress_entries
from topics.turns import Turn



@dataclass
class IngestResult:
    produced_at: dict[TurnKey, float] = field(default_factory=dict)
    done_at: dict[TurnKey, float] = field(default_factory=dict)
    ingested_at: dict[TurnKey, float] = field(default_factory=dict)
    """When the ingest stage's progress record of each turn arrived: its candidates were sent
    (or its skip, command, or disabled outcome decided) by then."""
    stages: StageTimes = field(default_factory=StageTimes)
    outcomes: dict[str, int] = field(default_factory=dict)
    started: float = 0.0
    finished: float = 0.0




async def ingest(broker_url: str, turns: list[Turn], one_record: bool, idle_timeout: float,
                 on_done: Callable[[], None], rate: float = 0.0,
                 ask: Ask | None = None) -> IngestResult:
    """Produce `turns` (at `rate` turns/s, or as fast as possible when 0) and wait for each;
    with `ask`, each turn is sent after `ask` read memory with it (a chat backend's read).

    Progress is consumed while the turns are produced, so a record's arrival time (what every
    latency here is measured to) is not held back until the last turn is sent.
    """
    result = IngestResult()
    users = {t.user_id for t in turns}
    consumer = make_consumer(broker_url, MEMORY_PROGRESS, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=20)
    await consumer.start()
    completion = Completion()

    async def produce() -> None:
        async with TurnProducer(broker_url, one_record) as producer:
            for i, turn in enumerate(turns):
                if rate > 0:  # pace against the schedule, not the previous send
                    delay = result.started + i / rate - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                if ask is not None:
                    await ask(turn)
                result.produced_at[(turn.user_id, turn.thread_id, turn.turn_id)] = time.perf_counter()
                await producer.send_turn(turn)
            await producer.flush()

    result.started = time.perf_counter()
    producing = asyncio.create_task(produce())
    try:
        last_progress = time.monotonic()
        while len(result.done_at) < len(turns):
            batch = await consumer.getmany(timeout_ms=200)
            now = time.perf_counter()
            for records in batch.values():
                for p in (p for record in records for p in progress_entries(record.value)):
                    if p["user_id"] not in users:
                        continue
                    last_progress = time.monotonic()
                    result.outcomes[p["outcome"]] = result.outcomes.get(p["outcome"], 0) + 1
                    key = (p["user_id"], p["thread_id"], p["turn_id"])
                    result.stages.add(p)
                    if p["stage"] == "ingest" and key not in result.ingested_at:
                        result.ingested_at[key] = now
                    if completion.record(p) and key not in result.done_at:
                        result.done_at[key] = now
                        on_done()
            if producing.done():
                producing.result()  # a failed send stops the run here
            else:
                last_progress = time.monotonic()
            if time.monotonic() - last_progress > idle_timeout:
                raise BrokerError(
                    f"no progress for {idle_timeout:.0f}s: {len(result.done_at)}/{len(turns)} turns done"
                )
        await producing
        result.finished = max(result.done_at.values(), default=time.perf_counter())
    finally:
        if not producing.done():
            producing.cancel()
            await asyncio.gather(producing, return_exceptions=True)
        await consumer.stop()
    return result


async def broker_raw_rate(broker_url: str, turns: list[Turn], partitions: int, one_record: bool) -> float:
    """The broker alone: produce the same messages to a scratch topic and consume them back."""
    topic = f"bench.raw.{uuid.uuid4().hex[:8]}"
    await create_topics(broker_url, [topic], partitions)
    payloads = [(t.user_id.encode(), t.model_dump_json().encode()) for t in turns]
    consumer = make_consumer(broker_url, topic, auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    producer = make_producer(broker_url, one_record)
    await producer.start()
    try:
        started = time.perf_counter()
        for key, value in payloads:
            await producer.send(topic, key=key, value=value)
        received = 0
        while received < len(payloads):
            batch = await consumer.getmany(timeout_ms=1000)
            received += sum(len(r) for r in batch.values())
            if time.perf_counter() - started > 600:
                raise BrokerError("raw broker measurement timed out")
        return len(payloads) / (time.perf_counter() - started)
    finally:
        await producer.stop()
        await consumer.stop()


def stack_processes(stack: Stack) -> dict[str, int | None]:
    """The processes whose CPU a run accounts for: the workers (`worker-0`, …) and broker this
    bench started (None: not started here) and the bench itself (its producer and progress
    consumer)."""
    broker = stack._broker.pid if stack._broker is not None else None
    workers: dict[str, int | None] = {f"worker-{i}": w.pid for i, w in enumerate(stack._workers)}
    return {**(workers or {"worker-0": None}), "broker": broker, "bench": os.getpid()}


def workers_summed(snapshot: dict[str, float | None]) -> dict[str, float | None]:
    """A CPU snapshot with its `worker-i` entries summed as `worker` (None if any is None)."""
    parts = [v for k, v in snapshot.items() if k.startswith("worker-")]
    rest = {k: v for k, v in snapshot.items() if not k.startswith("worker-")}
    known = [v for v in parts if v is not None]
    return {"worker": sum(known) if parts and len(known) == len(parts) else None, **rest}


async def worker_rss(stack: Stack) -> int | None:
    """The workers' resident bytes now, summed: from /proc for the workers this bench started,
    else from the worker's /metrics when it exports `process_resident_memory_bytes` (None when
    neither)."""
    if stack._workers:
        sizes = [process_rss(w.pid) for w in stack._workers]
        known = [size for size in sizes if size is not None]
        return sum(known) if len(known) == len(sizes) else None
    headers = {"Authorization": f"Bearer {stack.api_key}"} if stack.api_key else {}
    if not headers and os.environ.get("MEMSTREAM_API_KEY"):
        headers = {"Authorization": f"Bearer {os.environ['MEMSTREAM_API_KEY']}"}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            async with session.get(stack.api_url + "/metrics", headers=headers) as response:
                if response.status != 200:
                    return None
                value = metric_value(await response.text(), "process_resident_memory_bytes")
    except (aiohttp.ClientError, asyncio.TimeoutError):
        return None
    return None if value is None else int(value)


async def warm_worker(stack: Stack, user_id: str) -> None:
    """One query for a user with no memories: the worker loads its embedder and runs it once
    (the model loads in the background while the worker joins, and the first inference
    allocates more), so the RSS measured next is the worker's baseline, not the model's load.
    Nothing is stored (record_access=False); a failure is ignored."""
    try:
        async with ApiClient(stack.api_url, api_key=stack.api_key) as client:
            await client.query(user_id, "warm up", top_k=1, record_access=False)
    except Exception:  # noqa: BLE001 - the baseline is then only less exact
        pass


@dataclass
class RunEvents:
    """What the run's users got on `memory.events` and `memory.proactivity`."""

    candidate_texts: list[str] | None
    """The summaries of the `candidate` events (the texts the pipeline embedded); None without
    a master key to open them."""
    kinds: dict[str, int]
    """memory events by kind (created, updated, soft_deleted, consolidated, …)."""
    proactivity: int
    """memory.proactivity records."""


async def read_run_events(stack: Stack, users: set[str]) -> RunEvents:
    """The run's events (`RunEvents`); the kinds and counts need no key (they are not sealed)."""
    from streams.privacy.crypto import master_key_of
    from streams.tools.unseal import TopicUnsealer, read_records

    kinds: Counter[str] = Counter()
    sealed: list[MemoryEvent] = []
    for key, value in await read_records(stack.broker_url, MEMORY_EVENTS):
        for event in events_of(value):
            if event.user_id not in users:
                continue
            kinds[event.kind] += 1
            if event.kind == "candidate":
                sealed.append(event)
    proactivity = sum(1 for key, _ in await read_records(stack.broker_url, MEMORY_PROACTIVITY)
                      if (key or b"").decode("utf-8", "replace") in users)
    master = stack.master_key or master_key_of(get_settings().privacy)
    texts = None
    if master is not None:
        unsealer = TopicUnsealer(stack.broker_url, stack.app_id, master)
        await unsealer.refresh()
        opened = [await unsealer.open_event(event) for event in sealed]
        texts = candidate_summaries([e.model_dump(mode="json") for e in opened if e is not None],
                                    users)
    return RunEvents(texts, dict(sorted(kinds.items())), proactivity)


async def active_summaries(api_url: str, conversations: list[LocomoConversation],
                           api_key: str | None = None,
                           ) -> tuple[dict[tuple[str, str], list[str]], dict[str, int]]:
    """Summaries of the active memories, by (user, memory type); and the memories by state."""
    out: dict[tuple[str, str], list[str]] = {}
    states: Counter[str] = Counter()
    async with ApiClient(api_url, api_key=api_key) as client:
        for conv in conversations:
            for m in await client.memories(conv.user_id):
                states[m["state"]] += 1
                if m["state"] == "active":
                    out.setdefault((conv.user_id, m["type"]), []).append(m["summary"])
    return out, dict(sorted(states.items()))


def duplicates(summaries: dict[tuple[str, str], list[str]], embedder: Any) -> float:
    """Duplicate rate over (user, type) groups, each against its type's auto-update band."""
    from streams.memory.dedup import bands_for

    rates, total = 0.0, 0
    for (_user, kind), texts in summaries.items():
        n = len(texts)
        rates += duplicate_rate({"g": embedder.embed(texts)}, bands_for(kind, embedder.profile).auto) * n
        total += n
    return rates / total if total else 0.0


def stored_quality(summaries: dict[tuple[str, str], list[str]], conversations: list[LocomoConversation],
                   files: list[Path], embedder: Any) -> dict[str, Any]:
    """Quality of what was stored (active memories): the writing-constraint pass rate (seed 001
    §9) and precision against the conversation's gold observations — the share of stored
    summaries whose best cosine to a gold observation reaches 0.6 / 0.7 / 0.8. Files without
    observations are left out of precision (None when no file has any)."""
    from benchmarks.gold import best_similarities, gold_texts
    from streams.write.writing import writing_pass_rate

    stored = [(kind, text) for (_u, kind), texts in summaries.items() for text in texts]
    sims: list[np.ndarray] = []
    for conv, path in zip(conversations, files):
        gold = gold_texts(path)
        mine = [t for (user, _k), texts in summaries.items() if user == conv.user_id for t in texts]
        if gold and mine:
            sims.append(best_similarities(mine, gold, embedder.embed))
    joined = np.concatenate(sims) if sims else np.zeros(0)
    return {
        "writing_pass_rate": round(writing_pass_rate(
            SimpleNamespace(summary=t, type=k) for k, t in stored), 4),
        "precision_against_gold": ({str(t): round(float((joined >= t).mean()), 4)
                                    for t in (0.6, 0.7, 0.8)} if joined.size else None),
    }


async def query_all(api_url: str, conversations: list[LocomoConversation],
                    api_key: str | None = None, results: QuestionResults | None = None,
                    points: list[Point] | None = None) -> tuple[RecallReport, list[float]]:
    report, latencies = RecallReport(), []
    async with ApiClient(api_url, api_key=api_key) as client:
        for conv in conversations:
            for question in conv.scored_questions:
                started = time.perf_counter()
                # record_access=False: LoCoMo questions are independent; a read refreshing
                # last_accessed would lift its items' recency for every later question.
                items = await client.query(conv.user_id, question.question, top_k=max(KS),
                                           record_access=False, explain=points is not None)
                latencies.append((time.perf_counter() - started) * 1000)
                ranked = [(i["summary"], i["source_turn_ids"]) for i in items]
                report.add(question.evidence, ranked)
                if points is not None:
                    points += [Point(i["explain"]["relevance"], i["score"],
                                     answered(question.evidence, i["source_turn_ids"]),
                                     rank=i["explain"]["rank_score"])
                               for i in items]
                if results is not None:
                    results.add(conv.user_id, question.category, question.evidence, ranked)
    return report, latencies


def baseline_recall(conversations: list[LocomoConversation], embedder: Any = None,
                    hybrid: Retrieval | None = None,
                    hybrid_results: QuestionResults | None = None) -> tuple[RecallReport, RecallReport]:
    """Recall of the raw-turn baselines: every turn searched by cosine alone, and by `hybrid`
    (cosine fused with BM25, as memory queries in hybrid mode; the settings' fusion when None).
    The hybrid baseline's items per question also go to `hybrid_results` when given."""
    from streams.providers.embedders.minilm import LocalMiniLMEmbedder

    embedder = embedder or LocalMiniLMEmbedder()
    hybrid = replace(hybrid or _settings_retrieval(), mode="hybrid")
    baseline = RawTurnBaseline(embedder.embed)
    baseline.index(t for c in conversations for t in c.turns)
    dense_report, hybrid_report = RecallReport(), RecallReport()
    for conv in conversations:
        questions = conv.scored_questions
        vectors = embedder.embed([q.question for q in questions])
        for question, vector in zip(questions, vectors):
            dense_report.add(question.evidence, baseline.search(conv.user_id, vector, max(KS)))
            items = baseline.search(conv.user_id, vector, max(KS), text=question.question,
                                    retrieval=hybrid)
            hybrid_report.add(question.evidence, items)
            if hybrid_results is not None:
                hybrid_results.add(conv.user_id, question.category, question.evidence, items)
    return dense_report, hybrid_report


def _settings_retrieval() -> Retrieval:
    return Retrieval.of(get_settings().read)


def run_offline_bench(files: list[Path], console: Console, cross_validated: bool = False,
                      lifecycle: bool = True, live_queries: bool = False,
                      plot_path: Path | None = None) -> dict[str, Any]:
    """Recall and memory counts from the worker's stages run in process (no Kafka, no timings);
    with `cross_validated`, also recall per half of the conversations and per question
    category (`benchmarks.crossval`); `lifecycle` (the worker's default) runs the lifecycle
    during the replay; `live_queries` replays once more reading memory before every turn, as a
    chat backend does (`benchmarks.live_chat`), and reports that recall too."""
    from streams.app.services import settings_embedder
    from streams.app.inprocess import InProcessPipeline

    settings = get_settings().with_values(lifecycle_enabled=lifecycle)
    embedder = settings_embedder(settings)  # EMBEDDER picks the kind, as in a worker
    console.print(f"embedder: {settings.embedding.embedder} ({embedder.profile.name})")
    conversations = [load_conversation(p) for p in files]
    pipeline = InProcessPipeline(settings, embedder)
    retrieval = Retrieval.of(settings.read)
    console.print(f"retrieval: {retrieval.mode}" + (
        f" ({retrieval.fusion})" if retrieval.mode == "hybrid" else ""))
    turns = [t for c in conversations for t in c.turns]
    results = QuestionResults()
    points: list[Point] = []
    report, stages_cpu = asyncio.run(_offline_recall(pipeline, conversations, turns, results, points))
    outcomes = pipeline.outcomes()
    created = outcomes.get("created", 0)
    summaries: dict[tuple[str, str], list[str]] = {}
    for conv in conversations:
        for m in pipeline.store.user_memories(conv.user_id):
            if m.is_visible:
                summaries.setdefault((conv.user_id, m.type), []).append(m.summary)
    names = {c.user_id: p.name for c, p in zip(conversations, files)}
    stored = {c.user_id: stored_with_vectors(pipeline, c.user_id) for c in conversations}
    state = end_state(stored, names, pipeline.store.index().dim)
    live = None
    if live_queries:
        console.print(f"replaying again, reading memory (top {settings.read.memory_k}) before every turn ...")
        live = asyncio.run(_offline_live_recall(InProcessPipeline(settings, embedder),
                                                conversations, turns, settings.read.memory_k))
    base_results = QuestionResults()
    base, base_hybrid = baseline_recall(conversations, embedder, retrieval, base_results)
    return {
        **stored_quality(summaries, conversations, files, embedder),
        "duplicate_rate": round(duplicates(summaries, embedder), 4),
        "mode": "offline", "embedder": embedder.profile.name, "files": [str(p) for p in files], "turns": len(turns),
        "lifecycle": lifecycle,
        "stages_cpu_ms_per_turn": round(1000 * stages_cpu / max(len(turns), 1), 3),
        "end_state_digest": end_state_digest(stored),
        "retrieval": asdict(retrieval),
        "memories_written": created, "memories_updated": outcomes.get("updated", 0),
        "memories_per_turn": round(created / max(len(turns), 1), 4), **report.as_dict(),
        "baseline_raw_turns": base.as_dict(),
        "baseline_raw_turns_hybrid": base_hybrid.as_dict(),
        "per_conversation": per_conversation(results, conversations, files),
        "score_reliability": _reliability(points, plot_path, console),
        "end_state": state,
        **({"live_queries": live} if live is not None else {}),
        **_cross_validation(cross_validated, results, base_results, conversations, files),
    }


def stored_with_vectors(pipeline: Any, user_id: str) -> list[Any]:
    """The user's memories as stored, each with its vector (what a worker's rebuild reads)."""
    index = pipeline.store.index().user(user_id)
    return [m.model_copy(update={"embedding_b64": index.vector_b64(m.id)})
            for m in index.stored_docs()]


async def _offline_live_recall(pipeline: Any, conversations: list[LocomoConversation],
                               turns: list[Turn], top_k: int) -> dict[str, Any]:
    """`turns` through a fresh in-process pipeline, memory read before each one (a recorded
    read of `top_k` items, the turn's text as the query); then the questions."""
    async def ask(turn: Turn) -> None:
        await pipeline.query(turn.user_id, turn.text, top_k, record_access=True)

    async def send(turn: Turn) -> None:
        await pipeline.send_turn(turn)
        await pipeline.deliver(flush=False)

    queries = await live_replay(turns, ask, send)
    await pipeline.deliver()
    report = await _ask_questions(pipeline, conversations)
    states = Counter(m.state for c in conversations for m in pipeline.store.user_memories(c.user_id))
    return {**recall_summary(report, queries, top_k), "by_state": dict(sorted(states.items()))}


async def _offline_recall(pipeline: Any, conversations: list[LocomoConversation],
                          turns: list[Turn], results: QuestionResults | None = None,
                          points: list[Point] | None = None) -> tuple[RecallReport, float]:
    """Ingest `turns` through the in-process stages, then ask every scored question (each
    one's items also go to `results`, for the cross-validated report, and to `points`); and
    the CPU seconds the stages took on this thread while ingesting (the event loop's: the
    model runs on threads of its own, `Services.embed`, so it is left out)."""
    started = time.thread_time()
    await pipeline.ingest(turns)
    stages_cpu = time.thread_time() - started
    return await _ask_questions(pipeline, conversations, results, points), stages_cpu


def end_state_digest(stored: dict[str, list[Any]]) -> str:
    """A fingerprint of every stored memory, vectors included (16 hex digits of a SHA-256 over
    the documents in user and id order): two runs that end in the same memories give the same
    digest, so a change made for speed shows that it changed nothing."""
    hashed = hashlib.sha256()
    for user_id in sorted(stored):
        for memory in sorted(stored[user_id], key=lambda m: m.id):
            hashed.update(orjson.dumps(memory.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS))
    return hashed.hexdigest()[:16]


async def _ask_questions(pipeline: Any, conversations: list[LocomoConversation],
                         results: QuestionResults | None = None,
                         points: list[Point] | None = None) -> RecallReport:
    """Every scored question asked of the in-process pipeline (an evaluation read: not
    recorded); each one's items also go to `results`, and their scores to `points`, when
    given."""
    report = RecallReport()
    for conv in conversations:
        for question in conv.scored_questions:
            hits = await pipeline.query(conv.user_id, question.question, max(KS))
            items = [(h.memory.summary, h.memory.source_turn_ids) for h in hits]
            report.add(question.evidence, items)
            if results is not None:
                results.add(conv.user_id, question.category, question.evidence, items)
            if points is not None:
                points += [Point(h.relevance or h.similarity, h.calibrated,
                                 answered(question.evidence, h.memory.source_turn_ids),
                                 rank=h.score)
                           for h in hits]
    return report


def run_locomo_bench(files: list[Path], *, broker: str | None, api: str | None, partitions: int,
                     console: Console, rate: float = 0.0, cross_validated: bool = False,
                     lifecycle: bool = True, live_queries: bool = False,
                     plot_path: Path | None = None, workers: int = 1, users_per_file: int = 1,
                     single_worker_rate: float | None = None,
                     scaling: bool = False, profile_dir: Path | None = None,
                     broker_storage: str = "disk") -> dict[str, Any]:
    """Run the whole benchmark and return the report (see module doc); `cross_validated`
    adds recall per half of the conversations and per question category; `lifecycle` runs the
    lifecycle in the fresh stack's workers, as a worker does by default (a running worker,
    `broker`, does as configured); `live_queries` replays once more under other user ids,
    reading memory before every turn (`benchmarks.live_chat`), and reports that recall.

    Scale-out (`benchmarks.bench_scale`): the fresh stack runs `workers` workers in one
    group; each file is replayed under `users_per_file` user ids spread over the partitions,
    and recall is scored on every copy. The scaling efficiency compares with
    `single_worker_rate` (turns/s) when given, else with `scaling`, with a one-worker drain of
    the same turns on a fresh stack right after the run. `profile_dir` (a fresh stack only):
    each worker's event loop is profiled by its CPU clock while the turns drain
    (`benchmarks.cpu_profiles`), written there and summed up in the report's `cpu_profile`."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from benchmarks.broker_batches import batch_bytes_per_turn, read_batches
    from benchmarks.bench_scale import (
        MODEL_CPU_METRIC,
        STAGE_CPU_METRIC,
        THREAD_CPU_METRIC,
        TURNS_METRIC,
        WorkerRun,
        broker_end_offsets,
        copy_label,
        delta,
        delta_by_label,
        interleaved,
        metric_by_label,
        metric_total,
        model_cpu,
        per_turn,
        read_written,
        scale_out_report,
        settled_end_offsets,
        spread_copies,
        stage_cpu,
        thread_cpu,
        written_ranges,
    )

    run_id = uuid.uuid4().hex[:6]
    originals = [load_conversation(p) for p in files]
    if broker:
        stack = Stack(broker, api or "http://127.0.0.1:6066")
        partitions = asyncio.run(topic_partitions(broker, CHAT_TURNS)) or partitions
    else:
        console.print(f"starting a fresh embedded broker and {workers} worker(s) ...")
        stack = start_stack(partitions, lifecycle, workers, profile_dir, broker_storage)
    try:
        asyncio.run(wait_ready(stack.api_url, None))
        statuses = asyncio.run(_statuses(stack))
        held = [turn_partitions(health, CHAT_TURNS) for health, _ in statuses]
        # Fresh user ids per run, so a run against a long-lived stack starts from nothing; each
        # file under `users_per_file` of them, spread over the partitions (the workers' in turn).
        copies = spread_copies(originals, users_per_file, partitions, f"bench{run_id}-",
                               interleaved(held, partitions))
        conversations = [conv for conv, _ in copies]
        conv_files = [files[i // users_per_file] for i in range(len(copies))]
        names = [Path(copy_label(path.name, copy, users_per_file))
                 for path, (_, copy) in zip(conv_files, copies)]
        turns = [t for c in conversations for t in c.turns]
        console.print(f"{len(conversations)} conversations ({len(files)} files x {users_per_file} "
                      f"users), {len(turns)} turns, "
                      f"{sum(len(c.scored_questions) for c in conversations)} scored questions")
        for i, parts in enumerate(held or [[0]]):  # every worker's model, through a user of its own
            asyncio.run(warm_worker(stack, warmup_user(f"bench{run_id}-warmup{i}-", parts[:1] or [0],
                                                       partitions)))
        rss_start = asyncio.run(worker_rss(stack))
        offsets_start = asyncio.run(broker_end_offsets(stack.broker_url))
        statuses = asyncio.run(_statuses(stack))
        processes = stack_processes(stack)
        cpu_start = cpu_snapshot(processes)
        if profile_dir is not None:
            start_profiles(processes)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as bar:
            task = bar.add_task("ingesting turns", total=len(turns))
            result = asyncio.run(ingest(stack.broker_url, turns, stack.one_record_batches, 120.0,
                                        lambda: bar.advance(task), rate))
        cpu_end = cpu_snapshot(processes)
        profiles = None if profile_dir is None else stop_profiles(processes, profile_dir)
        statuses_end = asyncio.run(_statuses(stack))
        rss_end = asyncio.run(worker_rss(stack))
        console.print("reading the run's records back from the broker ...")
        offsets_end = asyncio.run(settled_end_offsets(stack.broker_url))
        written = written_ranges(offsets_start, offsets_end)
        traffic = asyncio.run(read_written(stack.broker_url, written))
        batches = asyncio.run(read_batches(stack.broker_url, written))
        console.print("reading the run's events ...")
        run_events = asyncio.run(read_run_events(stack, {c.user_id for c in conversations}))
        candidate_texts = run_events.candidate_texts
        console.print("measuring the broker's raw produce->consume rate ...")
        raw_rate = asyncio.run(broker_raw_rate(stack.broker_url, turns, partitions, stack.one_record_batches))
        console.print("querying ...")
        results = QuestionResults()
        points: list[Point] = []
        report, query_ms = asyncio.run(query_all(stack.api_url, conversations, stack.api_key,
                                                 results, points))
        summaries, memory_states = asyncio.run(active_summaries(stack.api_url, conversations,
                                                                stack.api_key))
        per_user = asyncio.run(states_per_user(stack, conversations, names))
        live = None
        if live_queries:
            live = _broker_live_recall(stack, conversations, run_id, get_settings().read.memory_k, console)
    finally:
        stack.close()
    elapsed = max(result.finished - result.started, 1e-9)
    worker_runs = [
        WorkerRun(url, turn_partitions(health, CHAT_TURNS),
                  turns=delta(metric_total(text, TURNS_METRIC),
                              metric_total(after[1], TURNS_METRIC)),
                  cpu_seconds=delta(cpu_start.get(f"worker-{i}"), cpu_end.get(f"worker-{i}")),
                  model_cpu_seconds=delta(metric_total(text, MODEL_CPU_METRIC),
                                          metric_total(after[1], MODEL_CPU_METRIC)),
                  stage_cpu_seconds=delta_by_label(
                      metric_by_label(text, STAGE_CPU_METRIC, "stage"),
                      metric_by_label(after[1], STAGE_CPU_METRIC, "stage")),
                  thread_cpu_seconds=delta_by_label(
                      metric_by_label(text, THREAD_CPU_METRIC, "thread"),
                      metric_by_label(after[1], THREAD_CPU_METRIC, "thread")))
        for i, (url, (health, text), after) in enumerate(zip(stack.urls, statuses, statuses_end))]
    single_source, single_cpu = None, None
    if single_worker_rate:
        single_source = "given (--single-worker-rate)"
    elif scaling and (workers > 1 and not broker):
        console.print("draining the same turns with one worker on a fresh stack (--scaling) ...")
        single_worker_rate, single_cpu = single_worker_drain(turns, partitions, lifecycle,
                                                             stack.one_record_batches, broker_storage)
        single_source = ("measured (--scaling): one worker, a fresh stack, the same turns and "
                         "partitions, right after this run")
    elif scaling and workers == 1 and not broker:
        single_worker_rate, single_source = round(len(turns) / elapsed, 2), "this run (one worker)"
    scale_out = scale_out_report(
        worker_runs, turns=len(turns), seconds=elapsed, partitions=partitions,
        users=len(conversations), users_per_file=users_per_file,
        single_worker_turns_per_s=single_worker_rate, single_worker_source=single_source,
        single_worker_cpu=single_cpu,
        broker_cpu_seconds=delta(cpu_start.get("broker"), cpu_end.get("broker")))
    cpu = cpu_report(workers_summed(cpu_start), workers_summed(cpu_end), len(turns), elapsed)
    cpu.update(model_cpu(worker_runs, len(turns), cpu["ms_per_turn"].get("worker")))
    cpu.update(stage_cpu(worker_runs, len(turns)))
    cpu.update(thread_cpu(worker_runs, len(turns)))
    from streams.app.services import settings_embedder

    # The same model as the worker's (EMBEDDER), at its best alone: with ONNX Runtime's spinning
    # threads, which a worker turns off (EMBEDDER_THREAD_SPINNING) to leave its event loop a core.
    settings = get_settings().with_values(embedder_thread_spinning=True)
    embedder = settings_embedder(settings)
    embed_alone: dict[str, Any] = {"embedder": embedder.profile.name, "texts": None,
                                   "batch": settings.dedup.dedup_batch_size, "seconds": None}
    if candidate_texts is not None:
        console.print(f"timing the embedder alone on the run's {len(candidate_texts)} candidate summaries ...")
        embed_alone.update(texts=len(candidate_texts), seconds=round(
            time_embedding(embedder.embed, candidate_texts, settings.dedup.dedup_batch_size), 3))
    console.print("raw-turn baselines ...")
    base_results = QuestionResults()
    # The copies of a file (--users-per-file) have the same raw turns: one baseline per file.
    base, base_hybrid = baseline_recall(conversations if users_per_file == 1 else originals,
                                        embedder, Retrieval.of(settings.read), base_results)
    dup = duplicates(summaries, embedder)

    e2e = latencies_ms(result.produced_at, result.done_at)
    candidate_ms = latencies_ms(result.produced_at, result.ingested_at)
    stages = result.stages.report()
    created = result.outcomes.get("created", 0)
    rss = rss_report(rss_start, rss_end, created)
    return {
        "files": [str(p) for p in files],
        "lifecycle": lifecycle if broker is None else None,  # None: as the running worker is set
        "broker_storage": broker_storage if broker is None else None,  # None: the running broker's
        "turns": len(turns),
        "produce_rate_turns_per_s": rate or "unlimited",
        "memories_written": created,
        "memories_updated": result.outcomes.get("updated", 0),
        "memories_per_turn": round(created / max(len(turns), 1), 4),
        "duplicate_rate": round(dup, 4),
        **stored_quality(summaries, conversations, conv_files, embedder),
        "outcomes": result.outcomes,
        "memory_events_by_kind": run_events.kinds,
        "proactivity_records": run_events.proactivity,
        "memories_by_state": memory_states,
        "end_state": {"per_user": per_user, "by_state": memory_states,
                      "worker_rss_growth_per_user_bytes": (
                          None if None in (rss_start, rss_end) else
                          (rss_end - rss_start) // max(len(conversations), 1))},
        "per_conversation": per_conversation(results, conversations, names),
        "score_reliability": _reliability(points, plot_path, console),
        **({"live_queries": live} if live is not None else {}),
        "ingest_turns_per_s": round(len(turns) / elapsed, 2),
        "broker_raw_msgs_per_s": round(raw_rate, 2),
        "e2e_latency_ms": percentiles(e2e, (50, 95, 99)),
        "candidate_latency_ms": percentiles(candidate_ms, (50, 95, 99)),
        "stage_latency_ms": stages,
        "longest_queue_stage": dominant_queue(stages),
        "embedder_limit_turns_per_s": (embedder_limit(len(turns), embed_alone["seconds"])
                                       if embed_alone["seconds"] is not None else None),
        "embedder_alone": embed_alone,
        "worker_rss_bytes": rss,
        "cpu": cpu,
        **({"cpu_profile": profiles} if profiles is not None else {}),
        **per_turn(traffic, len(turns)),
        **batch_bytes_per_turn(batches, len(turns)),
        "scale_out": scale_out,
        "worker_rss_bytes_per_memory": rss["per_memory"],
        "query_latency_ms": percentiles(query_ms, (50, 95)),
        **report.as_dict(),
        "retrieval": asdict(Retrieval.of(settings.read)),
        "baseline_raw_turns": base.as_dict(),
        "baseline_raw_turns_hybrid": base_hybrid.as_dict(),
        **_cross_validation(cross_validated, results, base_results, conversations, names),
    }


async def _statuses(stack: Stack) -> list[tuple[dict[str, Any] | None, str | None]]:
    """Every worker's /health and /metrics (`streams.tools.stack.worker_status`)."""
    return [await worker_status(url, stack.api_key) for url in stack.urls]


def warmup_user(stem: str, partitions_held: list[int], partitions: int) -> str:
    """A user id (`stem` + a number) on one of `partitions_held`."""
    from benchmarks.bench_scale import partition_of

    return next(f"{stem}{n}" for n in range(1_000_000)
                if partition_of(f"{stem}{n}", partitions) in partitions_held)


async def topic_partitions(broker_url: str, topic: str) -> int | None:
    """How many partitions `topic` has on the broker (None: not there)."""
    consumer = make_consumer(broker_url, enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer.topics()
        found = consumer.partitions_for_topic(topic)
        return len(found) if found else None
    finally:
        await consumer.stop()


def single_worker_drain(turns: list[Turn], partitions: int, lifecycle: bool,
                        one_record: bool, broker_storage: str = "disk") -> tuple[float, dict[str, Any]]:
    """Turns/s of one worker draining `turns` (produced all at once) on a fresh stack, and that
    worker's CPU over the drain (`single_worker_cpu`): beside the N workers' own, it shows
    whether a worker's CPU a turn grew when N shared the machine."""
    from benchmarks.bench_scale import (
        MODEL_CPU_METRIC,
        WorkerRun,
        delta,
        metric_total,
        single_worker_cpu,
    )

    stack = start_stack(partitions, lifecycle, 1, broker_storage=broker_storage)
    try:
        asyncio.run(warm_worker(stack, "single-warmup"))
        [(_, before)] = asyncio.run(_statuses(stack))
        processes = stack_processes(stack)
        cpu_start = cpu_snapshot(processes)
        result = asyncio.run(ingest(stack.broker_url, turns, one_record, 120.0, lambda: None))
        cpu_end = cpu_snapshot(processes)
        [(_, after)] = asyncio.run(_statuses(stack))
    finally:
        stack.close()
    seconds = max(result.finished - result.started, 1e-9)
    run = WorkerRun(stack.urls[0], cpu_seconds=delta(cpu_start["worker-0"], cpu_end["worker-0"]),
                    turns=len(turns), model_cpu_seconds=delta(metric_total(before, MODEL_CPU_METRIC),
                                                              metric_total(after, MODEL_CPU_METRIC)))
    return round(len(turns) / seconds, 2), single_worker_cpu(run, seconds)


def _reliability(points: list[Point], plot_path: Path | None, console: Console) -> dict[str, Any]:
    """The served scores' reliability (`benchmarks.score_calibration`); its diagram written
    as PNG at `plot_path` when given."""
    report = reliability(points)
    if plot_path is not None and points:
        console.print(f"reliability diagram: {plot(report, plot_path, 'memstream scores on the questions')}")
    return report


async def states_per_user(stack: Stack, conversations: list[LocomoConversation],
                          files: list[Path]) -> dict[str, Any]:
    """Each user's memories by state, read from the registry (by conversation file name)."""
    out: dict[str, Any] = {}
    async with ApiClient(stack.api_url, api_key=stack.api_key) as client:
        for conv, path in zip(conversations, files):
            states = Counter(m["state"] for m in await client.memories(conv.user_id))
            out[path.name] = {"by_state": dict(sorted(states.items()))}
    return out


def _broker_live_recall(stack: Stack, conversations: list[LocomoConversation], run_id: str,
                        top_k: int, console: Console) -> dict[str, Any]:
    """The conversations again under other user ids, memory read through the query route
    before every turn (recorded as a read); then the questions (`benchmarks.live_chat`)."""
    live = [renamed(c, f"live{run_id}-") for c in conversations]
    turns = [t for c in live for t in c.turns]
    console.print(f"replaying again, reading memory (top {top_k}) before every turn ...")

    async def run() -> tuple[int, RecallReport, dict[str, int]]:
        asked = 0
        async with ApiClient(stack.api_url, api_key=stack.api_key) as client:
            async def ask(turn: Turn) -> None:
                nonlocal asked
                await client.query(turn.user_id, turn.text, top_k=top_k)
                asked += 1

            await ingest(stack.broker_url, turns, stack.one_record_batches, 120.0, lambda: None,
                         ask=ask)
        report, _ = await query_all(stack.api_url, live, stack.api_key)
        _, states = await active_summaries(stack.api_url, live, stack.api_key)
        return asked, report, states

    asked, report, states = asyncio.run(run())
    return {**recall_summary(report, asked, top_k), "by_state": states}


def _cross_validation(wanted: bool, results: QuestionResults, baseline: QuestionResults,
                      conversations: list[LocomoConversation], files: list[Path]) -> dict[str, Any]:
    """`{"cross_validation": ..., "cross_validation_baseline_hybrid": ...}` when `wanted` (else
    nothing): memories' and the hybrid raw-turn baseline's; see `benchmarks.crossval`."""
    if not wanted:
        return {}
    users, names = [c.user_id for c in conversations], [p.name for p in files]
    return {"cross_validation": cross_validate(results, users, names),
            "cross_validation_baseline_hybrid": cross_validate(baseline, users, names)}


def render_report(report: dict[str, Any], console: Console) -> None:
    table = Table(title="memstream LoCoMo benchmark")
    table.add_column("metric")
    table.add_column("memstream", justify="right")
    table.add_column("raw-turn baseline / broker", justify="right")
    table.add_column("hybrid raw-turn baseline", justify="right")
    base = report["baseline_raw_turns"]
    hybrid = report.get("baseline_raw_turns_hybrid")
    if retrieval := report.get("retrieval"):
        table.add_row("retrieval", retrieval["mode"] + (
            f" ({retrieval['fusion']})" if retrieval["mode"] == "hybrid" else ""), "dense",
            f"hybrid ({retrieval['fusion']})")
    if "embedder" in report:
        table.add_row("embedder", report["embedder"], "")
    table.add_row("turns", str(report["turns"]), "")
    if report.get("broker_storage"):
        table.add_row("broker storage", report["broker_storage"], "")
    if "lifecycle" in report:
        table.add_row("lifecycle during the replay", {True: "on", False: "off (--no-lifecycle)",
                                                      None: "as the worker is set"}[report["lifecycle"]], "")
    table.add_row("memories written (per turn)",
                  f"{report['memories_written']} ({report['memories_per_turn']})", "")
    table.add_row("duplicate rate", f"{report['duplicate_rate']:.2%}", "")
    if "stages_cpu_ms_per_turn" in report:  # offline
        table.add_row("stages' CPU on the event loop, ms per turn (model apart)",
                      f"{report['stages_cpu_ms_per_turn']:.3f}", "")
        table.add_row("end state digest", report["end_state_digest"], "")
    if "memory_events_by_kind" in report:
        kinds = report["memory_events_by_kind"]
        table.add_row("memory events by kind", ", ".join(f"{k} {n}" for k, n in kinds.items()),
                      f"{report['proactivity_records']} proactivity records")
        table.add_row("memories by state", ", ".join(
            f"{k} {n}" for k, n in report["memories_by_state"].items()), "")
    table.add_row("writing constraints pass", f"{report['writing_pass_rate']:.1%}", "")
    if precision := report.get("precision_against_gold"):
        table.add_row("precision vs gold @0.6/0.7/0.8",
                      " / ".join(f"{precision[t]:.2f}" for t in ("0.6", "0.7", "0.8")), "")
    if "ingest_turns_per_s" in report:  # absent offline
        table.add_row("ingest turns/s  |  broker raw msgs/s", f"{report['ingest_turns_per_s']}",
                      f"{report['broker_raw_msgs_per_s']}")
        e2e = report["e2e_latency_ms"]
        table.add_row("e2e latency ms p50/p95/p99", f"{e2e['p50']} / {e2e['p95']} / {e2e['p99']}", "")
        if cand := report.get("candidate_latency_ms"):
            table.add_row("candidate latency ms p50/p95/p99",
                          f"{cand['p50']} / {cand['p95']} / {cand['p99']}", "")
        for stage, f in report.get("stage_latency_ms", {}).items():
            q, w = f["queued_ms"], f["work_ms"]
            table.add_row(f"  {stage}: queued | work ms p50/p95",
                          f"{q['p50']} / {q['p95']}  |  {w['p50']} / {w['p95']}", f"{f['records']} records")
        if "embedder_alone" in report:
            alone = report["embedder_alone"]
            limit = report["embedder_limit_turns_per_s"]
            table.add_row("embedder limit turns/s (alone)", "n/a" if limit is None else f"{limit}",
                          "" if alone["seconds"] is None else
                          f"{alone['texts']} texts in {alone['seconds']} s, batches of {alone['batch']}")
        if rss := report.get("worker_rss_bytes"):
            per = report["worker_rss_bytes_per_memory"]
            table.add_row("worker RSS MiB start -> after ingest",
                          " -> ".join("n/a" if v is None else f"{v / 2**20:.1f}"
                                      for v in (rss["start"], rss["after_ingest"])),
                          "" if per is None else f"{per:.0f} B per memory")
        if (cpu := report.get("cpu")) and cpu["ms_per_turn"]:
            table.add_row("CPU ms per turn", "  ".join(f"{name} {ms}" for name, ms in cpu["ms_per_turn"].items()),
                          f"{cpu['cores_busy']} of {cpu['cores']} cores busy")
            if cpu.get("model_ms_per_turn") is not None:
                table.add_row("  worker CPU ms per turn: model | rest", f"{cpu['model_ms_per_turn']} | "
                              f"{'n/a' if cpu['rest_ms_per_turn'] is None else cpu['rest_ms_per_turn']}",
                              "memstream_embed_cpu_seconds_total")
            if stages := cpu.get("stages_ms_per_turn"):
                table.add_row("  event loop CPU ms per turn, by stage",
                              "  ".join(f"{stage} {ms}" for stage, ms in stages.items()),
                              "memstream_stage_cpu_seconds_total")
            if threads := cpu.get("threads_ms_per_turn"):
                table.add_row("  worker CPU ms per turn, by thread",
                              "  ".join(f"{thread} {ms}" for thread, ms in threads.items()),
                              "memstream_thread_cpu_seconds_total")
        if msgs := report.get("kafka_msgs_per_turn"):
            size = report["kafka_bytes_per_turn"]
            table.add_row("Kafka records | bytes per turn", f"{msgs['total']} | {size['total']:.0f}",
                          f"{report['kafka_written']['topics']} topics written")
            for topic, n in msgs["by_topic"].items():
                table.add_row(f"  {topic}", f"{n} | {size['by_topic'][topic]:.0f}", "")
        if at_broker := report.get("kafka_batch_bytes_per_turn"):
            table.add_row("Kafka bytes per turn at the broker (batches)", f"{at_broker['total']:.0f}",
                          f"{at_broker['batches_per_turn']} batches")
            for topic, n in at_broker["by_topic"].items():
                table.add_row(f"  {topic}", f"{n:.0f}", "/".join(at_broker["compression"][topic]))
        q = report["query_latency_ms"]
        table.add_row("query latency ms p50/p95", f"{q['p50']} / {q['p95']}", "")
    if mem0 := report.get("baseline_mem0"):
        ratio = report.get("ingest_over_mem0")
        table.add_row(f"mem0 {mem0['mem0_version']} add(infer=False) turns/s",
                      "" if ratio is None else f"ours {ratio}x", f"{mem0['turns_per_s']}")

    def of_hybrid(key: str, k: int, form: str) -> str:
        return format(hybrid[key][k], form) if hybrid else ""

    for k in KS:
        table.add_row(f"recall_any@{k}", f"{report['recall_any'][k]:.3f}", f"{base['recall_any'][k]:.3f}",
                      of_hybrid("recall_any", k, ".3f"))
        table.add_row(f"recall_all@{k}", f"{report['recall_all'][k]:.3f}", f"{base['recall_all'][k]:.3f}",
                      of_hybrid("recall_all", k, ".3f"))
    for k in KS:
        table.add_row(f"context words @{k}", f"{report['context_words_mean_at'][k]:.1f}",
                      f"{base['context_words_mean_at'][k]:.1f}", of_hybrid("context_words_mean_at", k, ".1f"))
    if rel := report.get("score_reliability"):
        table.add_row("score calibration error (ECE)", f"{rel['expected_calibration_error']:.3f}",
                      f"{rel['items']} items scored")
    if live := report.get("live_queries"):
        table.add_row(f"live chat replay: reads of top {live['read_top_k']} before each turn",
                      f"{live['queries']} reads", "")
        for k in KS:
            table.add_row(f"  recall_any@{k} with reads", f"{live['recall_any'][k]:.3f}", "")
        table.add_row("  memories by state with reads",
                      ", ".join(f"{k} {n}" for k, n in live["by_state"].items()), "")
    console.print(table)
    render_scale_out(report, console)
    render_end_state(report, console)
    if profile := report.get("cpu_profile"):
        render_cpu_profile(profile, console)
    if cv := report.get("cross_validation"):
        render_cross_validation(cv, console, "memories")
    if cv := report.get("cross_validation_baseline_hybrid"):
        render_cross_validation(cv, console, "hybrid raw-turn baseline")


def render_scale_out(report: dict[str, Any], console: Console) -> None:
    """Per worker: the partitions it held, the turns it processed, its CPU and cores busy."""
    scale = report.get("scale_out")
    if not scale:
        return
    efficiency = scale["scaling_efficiency"]
    single = scale["single_worker_turns_per_s"]
    table = Table(title=(
        f"scale-out: {scale['workers']} worker(s), {scale['partitions']} partitions, "
        f"{scale['users']} users; {scale['turns_per_s']} turns/s; efficiency "
        + ("n/a (no one-worker figure: --scaling or --single-worker-rate)" if efficiency is None
           else f"{efficiency} against {single} turns/s for one worker ({scale['single_worker_source']})")
        + ("" if scale["broker_cores_busy"] is None else f"; broker {scale['broker_cores_busy']} cores")))
    for name in ("worker", "partitions", "turns", "share", "CPU s", "cores busy", "CPU ms/turn",
                 "model CPU s", "event loop cores"):
        table.add_column(name, justify="left" if name in ("worker", "partitions") else "right")

    def shown(value: Any) -> str:
        return "n/a" if value is None else str(value)

    for row in scale["per_worker"]:
        table.add_row(f"{row['worker']} {row['api_url']}", ",".join(map(str, row["partitions"])),
                      *(shown(row[k]) for k in ("turns", "turn_share", "cpu_seconds", "cores_busy",
                                                "cpu_ms_per_turn", "model_cpu_seconds",
                                                "event_loop_cores_busy")))
    if one := scale.get("single_worker_cpu"):
        model = one["model_ms_per_turn"]
        table.add_row("one worker alone (--scaling)", "all", str(scale["turns"]), "1", "",
                      shown(one["cores_busy"]), shown(one["cpu_ms_per_turn"]),
                      "" if model is None else f"{model} ms/turn", "")
    console.print(table)


def render_end_state(report: dict[str, Any], console: Console) -> None:
    """Per conversation: recall_any@5/10/20, memories by state and the index's RAM."""
    recall = report.get("per_conversation") or {}
    users = (report.get("end_state") or {}).get("per_user") or {}
    if not recall:
        return
    table = Table(title="per conversation, at the end of the replay")
    for name in ("conversation", *(f"@{k}" for k in KS), "memories by state", "index MiB"):
        table.add_column(name, justify="left" if name in ("conversation", "memories by state") else "right")
    for name, row in recall.items():
        user = users.get(name, {})
        ram = user.get("index_bytes")
        table.add_row(name, *(f"{row['recall_any'][k]:.3f}" for k in KS),
                      ", ".join(f"{k} {n}" for k, n in user.get("by_state", {}).items()),
                      "" if ram is None else f"{ram / 2**20:.2f}")
    console.print(table)


def render_cross_validation(cv: dict[str, Any], console: Console, what: str) -> None:
    """The cross-validated recall: per half, per category, and each fold's gap."""
    table = Table(title=f"{what}: cross-validated recall_any (gap limit {cv['gap_limit']:.0%} at k=10: "
                        f"{'within' if cv['within_limit'] else 'EXCEEDED'}, "
                        f"max gap {cv['max_gap_at_10']:.3f})")
    for name in ("split", *(f"@{k}" for k in KS), "questions"):
        table.add_column(name, justify="left" if name == "split" else "right")
    for row in crossval_rows(cv):
        table.add_row(*row)
    console.print(table)
