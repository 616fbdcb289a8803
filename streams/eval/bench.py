"""`memstream bench locomo`: LoCoMo conversations through the running pipeline, measured.

One run reports, on the same machine: ingest throughput beside the broker's raw
produce->consume rate for the same messages; end-to-end latency (turn produced -> its last
progress record, i.e. its last memory event); query latency; recall from provenance with the
context size; and the same recall for a raw-turn baseline with the same embedder.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import aiohttp
import numpy as np
from aiokafka import AIOKafkaConsumer
from rich.console import Console
from rich.table import Table

from streams.api import auth
from streams.tools.broker import EmbeddedBroker, free_port
from streams.app.topic_admin import create_topics
from streams.tools.client import ApiClient, TurnProducer, make_producer
from streams.errors import BrokerError
from streams.privacy.crypto import encode_key, new_key
from streams.eval.locomo import LocomoConversation, load_conversation
from streams.eval.recall import KS, RawTurnBaseline, RecallReport, duplicate_rate
from topics.names import ALL_TOPICS, MEMORY_PROGRESS
from topics.turns import Turn

TurnKey = tuple[str, str, str]


def percentiles(values: list[float], qs: tuple[int, ...]) -> dict[str, float]:
    if not values:
        return {f"p{q}": float("nan") for q in qs}
    arr = np.asarray(values)
    return {f"p{q}": round(float(np.percentile(arr, q)), 2) for q in qs}


@dataclass
class Stack:
    """A broker and one worker to benchmark against; `close()` stops what was started here."""

    broker_url: str
    api_url: str
    one_record_batches: bool = True
    api_key: str | None = None  # None: the client's default (MEMSTREAM_API_KEY)
    _broker: EmbeddedBroker | None = None
    _worker: subprocess.Popen | None = None
    _workdir: Path | None = None

    def close(self) -> None:
        if self._worker is not None and self._worker.poll() is None:
            self._worker.terminate()
            try:
                self._worker.wait(30)
            except subprocess.TimeoutExpired:
                self._worker.kill()
                self._worker.wait()
        if self._broker is not None:
            self._broker.stop()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)


def start_worker(broker_url: str, web_port: int, data_dir: Path, app_id: str, partitions: int,
                 log_path: Path, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start `memstream worker` as a child process (it dies with its parent)."""
    from streams.tools.broker import _die_with_parent

    env = dict(os.environ, KAFKA_BROKER_URL=broker_url, WEB_PORT=str(web_port),
               DATA_DIR=str(data_dir), APP_ID=app_id, TOPIC_PARTITIONS=str(partitions),
               WEB_HOST="127.0.0.1", TABLE_STORE="rocksdb://", **(extra_env or {}))
    return subprocess.Popen(
        [sys.executable, "-m", "streams", "worker"], env=env, stdout=open(log_path, "ab"),
        stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
    )


async def wait_ready(api_url: str, proc: subprocess.Popen | None, timeout: float = 180.0) -> None:
    """Wait until the worker's /health says ready (its tables recovered, partitions assigned)."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise BrokerError(f"worker exited with code {proc.returncode}")
            try:
                async with session.get(api_url + "/health") as response:
                    if response.status == 200 and (await response.json()).get("ready"):
                        return
            except (aiohttp.ClientError, asyncio.TimeoutError):
                pass
            await asyncio.sleep(0.25)
    raise BrokerError(f"worker at {api_url} not ready after {timeout:.0f}s")


def start_stack(partitions: int) -> Stack:
    workdir = Path(tempfile.mkdtemp(prefix="memstream-bench-"))
    broker = EmbeddedBroker(log_path=workdir / "broker.log").start()
    asyncio.run(create_topics(broker.url, ALL_TOPICS, partitions))
    port = free_port()
    key = auth.new_key()  # the fresh worker accepts this admin key only
    keys = json.dumps([auth.entry_for(key, "bench", "admin").model_dump(exclude_none=True)])
    master = encode_key(new_key())  # the fresh worker's master key (its tables die with the run)
    worker = start_worker(broker.url, port, workdir / "data", "memstream-bench", partitions,
                          workdir / "worker.log",
                          {"MEMSTREAM_API_KEYS": keys, "MEMSTREAM_MASTER_KEY": master})
    stack = Stack(broker.url, f"http://127.0.0.1:{port}", True, api_key=key, _broker=broker,
                  _worker=worker, _workdir=workdir)
    try:
        asyncio.run(wait_ready(stack.api_url, worker))
    except BaseException:
        stack.close()
        raise
    return stack


@dataclass
class IngestResult:
    produced_at: dict[TurnKey, float] = field(default_factory=dict)
    done_at: dict[TurnKey, float] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    started: float = 0.0
    finished: float = 0.0


class Completion:
    """Tracks `memory.progress` until every fact of every turn has an outcome."""

    def __init__(self) -> None:
        self.facts_seen: dict[TurnKey, set[int]] = {}

    def record(self, p: dict[str, Any]) -> bool:
        """Account one progress record; True when it completes its turn."""
        key = (p["user_id"], p["thread_id"], p["turn_id"])
        if p["stage"] == "ingest":
            return p["fact_count"] == 0
        seen = self.facts_seen.setdefault(key, set())
        seen.add(p["fact_index"])
        return len(seen) >= p["fact_count"]


async def ingest(broker_url: str, turns: list[Turn], one_record: bool, idle_timeout: float,
                 on_done: Callable[[], None], rate: float = 0.0) -> IngestResult:
    """Produce `turns` (at `rate` turns/s, or as fast as possible when 0) and wait for each."""
    result = IngestResult()
    users = {t.user_id for t in turns}
    consumer = AIOKafkaConsumer(MEMORY_PROGRESS, bootstrap_servers=broker_url,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    completion = Completion()
    try:
        async with TurnProducer(broker_url, one_record) as producer:
            result.started = time.perf_counter()
            for i, turn in enumerate(turns):
                if rate > 0:  # pace against the schedule, not the previous send
                    delay = result.started + i / rate - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                result.produced_at[(turn.user_id, turn.thread_id, turn.turn_id)] = time.perf_counter()
                await producer.send_turn(turn)
            await producer.flush()
        last_progress = time.monotonic()
        while len(result.done_at) < len(turns):
            batch = await consumer.getmany(timeout_ms=500)
            now = time.perf_counter()
            for records in batch.values():
                for record in records:
                    p = json.loads(record.value)
                    if p["user_id"] not in users:
                        continue
                    last_progress = time.monotonic()
                    result.outcomes[p["outcome"]] = result.outcomes.get(p["outcome"], 0) + 1
                    key = (p["user_id"], p["thread_id"], p["turn_id"])
                    if completion.record(p) and key not in result.done_at:
                        result.done_at[key] = now
                        on_done()
            if time.monotonic() - last_progress > idle_timeout:
                raise BrokerError(
                    f"no progress for {idle_timeout:.0f}s: {len(result.done_at)}/{len(turns)} turns done"
                )
        result.finished = max(result.done_at.values(), default=time.perf_counter())
    finally:
        await consumer.stop()
    return result


async def broker_raw_rate(broker_url: str, turns: list[Turn], partitions: int, one_record: bool) -> float:
    """The broker alone: produce the same messages to a scratch topic and consume them back."""
    topic = f"bench.raw.{uuid.uuid4().hex[:8]}"
    await create_topics(broker_url, [topic], partitions)
    payloads = [(t.user_id.encode(), t.model_dump_json().encode()) for t in turns]
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker_url, auto_offset_reset="earliest",
                                enable_auto_commit=False)
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


async def active_summaries(api_url: str, conversations: list[LocomoConversation],
                           api_key: str | None = None) -> dict[tuple[str, str], list[str]]:
    """Summaries of the active memories, by (user, memory type)."""
    out: dict[tuple[str, str], list[str]] = {}
    async with ApiClient(api_url, api_key=api_key) as client:
        for conv in conversations:
            for m in await client.memories(conv.user_id):
                if m["state"] == "active":
                    out.setdefault((conv.user_id, m["type"]), []).append(m["summary"])
    return out


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
    from streams.eval.gold import best_similarities, gold_texts
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
                    api_key: str | None = None) -> tuple[RecallReport, list[float]]:
    report, latencies = RecallReport(), []
    async with ApiClient(api_url, api_key=api_key) as client:
        for conv in conversations:
            for question in conv.scored_questions:
                started = time.perf_counter()
                # record_access=False: LoCoMo questions are independent; a read refreshing
                # last_accessed would lift its items' recency for every later question.
                items = await client.query(conv.user_id, question.question, top_k=max(KS),
                                           record_access=False)
                latencies.append((time.perf_counter() - started) * 1000)
                report.add(question.evidence, [(i["summary"], i["source_turn_ids"]) for i in items])
    return report, latencies


def baseline_recall(conversations: list[LocomoConversation], embedder: Any = None) -> RecallReport:
    from streams.providers.embedders.minilm import LocalMiniLMEmbedder

    embedder = embedder or LocalMiniLMEmbedder()
    baseline = RawTurnBaseline(embedder.embed)
    baseline.index(t for c in conversations for t in c.turns)
    report = RecallReport()
    for conv in conversations:
        questions = conv.scored_questions
        vectors = embedder.embed([q.question for q in questions])
        for question, vector in zip(questions, vectors):
            report.add(question.evidence, baseline.search(conv.user_id, vector, max(KS)))
    return report


def run_offline_bench(files: list[Path], console: Console) -> dict[str, Any]:
    """Recall and memory counts from the worker's stages run in process (no Kafka, no timings)."""
    from streams.app.services import settings_embedder
    from streams.app.settings import get_settings
    from streams.pipeline.inprocess import InProcessPipeline

    settings = get_settings()
    embedder = settings_embedder(settings)  # EMBEDDER picks the kind, as in a worker
    console.print(f"embedder: {settings.embedder} ({embedder.profile.name})")
    conversations = [load_conversation(p) for p in files]
    pipeline = InProcessPipeline(settings, embedder)
    turns = [t for c in conversations for t in c.turns]
    report = asyncio.run(_offline_recall(pipeline, conversations, turns))
    outcomes = pipeline.outcomes()
    created = outcomes.get("created", 0)
    summaries: dict[tuple[str, str], list[str]] = {}
    for conv in conversations:
        for m in pipeline.store.user_memories(conv.user_id):
            if m.is_visible:
                summaries.setdefault((conv.user_id, m.type), []).append(m.summary)
    return {
        **stored_quality(summaries, conversations, files, embedder),
        "duplicate_rate": round(duplicates(summaries, embedder), 4),
        "mode": "offline", "embedder": embedder.profile.name, "files": [str(p) for p in files], "turns": len(turns),
        "memories_written": created, "memories_updated": outcomes.get("updated", 0),
        "memories_per_turn": round(created / max(len(turns), 1), 4), **report.as_dict(),
        "baseline_raw_turns": baseline_recall(conversations, embedder).as_dict(),
    }


async def _offline_recall(pipeline: Any, conversations: list[LocomoConversation],
                          turns: list[Turn]) -> RecallReport:
    """Ingest `turns` through the in-process stages, then ask every scored question."""
    await pipeline.ingest(turns)
    report = RecallReport()
    for conv in conversations:
        for question in conv.scored_questions:
            hits = await pipeline.query(conv.user_id, question.question, max(KS))
            report.add(question.evidence, [(h.memory.summary, h.memory.source_turn_ids) for h in hits])
    return report


def run_locomo_bench(files: list[Path], *, broker: str | None, api: str | None, partitions: int,
                     console: Console, rate: float = 0.0) -> dict[str, Any]:
    """Run the whole benchmark and return the report (see module doc)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    run_id = uuid.uuid4().hex[:6]
    conversations = []
    for path in files:
        conv = load_conversation(path)
        # Fresh user ids per run, so a run against a long-lived stack starts from nothing.
        prefix = f"bench{run_id}-"
        conv = LocomoConversation(
            user_id=prefix + conv.user_id, speakers=conv.speakers,
            turns=[t.model_copy(update={"user_id": prefix + t.user_id}) for t in conv.turns],
            questions=conv.questions,
        )
        conversations.append(conv)
    turns = [t for c in conversations for t in c.turns]
    console.print(f"{len(conversations)} conversations, {len(turns)} turns, "
                  f"{sum(len(c.scored_questions) for c in conversations)} scored questions")

    if broker:
        stack = Stack(broker, api or "http://127.0.0.1:6066")
    else:
        console.print("starting a fresh embedded broker and worker ...")
        stack = start_stack(partitions)
    try:
        asyncio.run(wait_ready(stack.api_url, None))
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as bar:
            task = bar.add_task("ingesting turns", total=len(turns))
            result = asyncio.run(ingest(stack.broker_url, turns, stack.one_record_batches, 120.0,
                                        lambda: bar.advance(task), rate))
        console.print("measuring the broker's raw produce->consume rate ...")
        raw_rate = asyncio.run(broker_raw_rate(stack.broker_url, turns, partitions, stack.one_record_batches))
        console.print("querying ...")
        report, query_ms = asyncio.run(query_all(stack.api_url, conversations, stack.api_key))
        summaries = asyncio.run(active_summaries(stack.api_url, conversations, stack.api_key))
    finally:
        stack.close()
    console.print("raw-turn baseline ...")
    from streams.app.services import settings_embedder
    from streams.app.settings import get_settings

    embedder = settings_embedder(get_settings())  # a fresh stack's worker reads the same EMBEDDER
    base = baseline_recall(conversations, embedder)
    dup = duplicates(summaries, embedder)

    e2e = [(result.done_at[k] - result.produced_at[k]) * 1000 for k in result.done_at]
    elapsed = max(result.finished - result.started, 1e-9)
    created = result.outcomes.get("created", 0)
    return {
        "files": [str(p) for p in files],
        "turns": len(turns),
        "produce_rate_turns_per_s": rate or "unlimited",
        "memories_written": created,
        "memories_updated": result.outcomes.get("updated", 0),
        "memories_per_turn": round(created / max(len(turns), 1), 4),
        "duplicate_rate": round(dup, 4),
        **stored_quality(summaries, conversations, files, embedder),
        "outcomes": result.outcomes,
        "ingest_turns_per_s": round(len(turns) / elapsed, 2),
        "broker_raw_msgs_per_s": round(raw_rate, 2),
        "e2e_latency_ms": percentiles(e2e, (50, 95, 99)),
        "query_latency_ms": percentiles(query_ms, (50, 95)),
        **report.as_dict(),
        "baseline_raw_turns": base.as_dict(),
    }


def render_report(report: dict[str, Any], console: Console) -> None:
    table = Table(title="memstream LoCoMo benchmark")
    table.add_column("metric")
    table.add_column("memstream", justify="right")
    table.add_column("raw-turn baseline / broker", justify="right")
    base = report["baseline_raw_turns"]
    if "embedder" in report:
        table.add_row("embedder", report["embedder"], "")
    table.add_row("turns", str(report["turns"]), "")
    table.add_row("memories written (per turn)",
                  f"{report['memories_written']} ({report['memories_per_turn']})", "")
    table.add_row("duplicate rate", f"{report['duplicate_rate']:.2%}", "")
    table.add_row("writing constraints pass", f"{report['writing_pass_rate']:.1%}", "")
    if precision := report.get("precision_against_gold"):
        table.add_row("precision vs gold @0.6/0.7/0.8",
                      " / ".join(f"{precision[t]:.2f}" for t in ("0.6", "0.7", "0.8")), "")
    if "ingest_turns_per_s" in report:  # absent offline
        table.add_row("ingest turns/s  |  broker raw msgs/s", f"{report['ingest_turns_per_s']}",
                      f"{report['broker_raw_msgs_per_s']}")
        e2e = report["e2e_latency_ms"]
        table.add_row("e2e latency ms p50/p95/p99", f"{e2e['p50']} / {e2e['p95']} / {e2e['p99']}", "")
        q = report["query_latency_ms"]
        table.add_row("query latency ms p50/p95", f"{q['p50']} / {q['p95']}", "")
    for k in KS:
        table.add_row(f"recall_any@{k}", f"{report['recall_any'][k]:.3f}", f"{base['recall_any'][k]:.3f}")
        table.add_row(f"recall_all@{k}", f"{report['recall_all'][k]:.3f}", f"{base['recall_all'][k]:.3f}")
    for k in KS:
        table.add_row(f"context words @{k}", f"{report['context_words_mean_at'][k]:.1f}",
                      f"{base['context_words_mean_at'][k]:.1f}")
    console.print(table)
