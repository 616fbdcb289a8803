"""What `bench locomo` measures across workers and on the broker (issue 22).

- **Scale-out** (`--workers N`, `--users-per-file K`): each conversation replayed under K user
  ids, chosen so the users spread evenly over the partitions (and, with fewer users than
  partitions, over the workers first); per worker, the `chat.turns` partitions it holds (its
  /health), the turns it processed (its `memstream_turns_total`, read before and after the
  drain), its CPU seconds and the cores it kept busy while draining; and the scaling efficiency,
  turns/s ÷ (N × one worker's turns/s).
- **The model's CPU** apart from the worker's (`memstream_embed_cpu_seconds_total`, see
  `streams.providers.embedders.cpu`), the event loop's CPU in each stage
  (`memstream_stage_cpu_seconds_total`, see `streams.observability.stage_cpu`), and the
  worker's CPU by thread (`memstream_thread_cpu_seconds_total`, see
  `streams.observability.thread_cpu`).
- **Kafka records and bytes per turn**, per topic and in total, over every topic the drain
  wrote to on the broker (the tables' changelogs included): end offsets before and after the
  drain, and the new records read back, each counted as its key + value + headers bytes (the
  payload; not the record-batch framing, compression or replication).

Pure helpers first, then the ones that talk to a worker or the broker.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.partitioner import murmur2
from aiokafka.structs import TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from streams.tools.locomo import LocomoConversation

TURNS_METRIC = "memstream_turns_total"
MODEL_CPU_METRIC = "memstream_embed_cpu_seconds_total"
STAGE_CPU_METRIC = "memstream_stage_cpu_seconds_total"
THREAD_CPU_METRIC = "memstream_thread_cpu_seconds_total"


# --- users spread over the partitions ------------------------------------------------------------
def partition_of(key: str, partitions: int) -> int:
    """The partition a record keyed `key` goes to (the producers' default partitioner)."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def interleaved(assigned: Sequence[Sequence[int]], partitions: int) -> list[int]:
    """Every partition once, the workers' in turn (w0's first, w1's first, w0's second, …),
    then any no worker holds: the order in which `spread_copies` fills partitions, so that
    with fewer users than partitions each worker still gets some."""
    order: list[int] = []
    for i in range(max((len(a) for a in assigned), default=0)):
        for a in assigned:
            if i < len(a) and a[i] not in order:
                order.append(a[i])
    return order + [p for p in range(partitions) if p not in order]


def renamed(conv: LocomoConversation, prefix: str) -> LocomoConversation:
    """`conv` under the user id `prefix` + its own (its turns too)."""
    return LocomoConversation(
        user_id=prefix + conv.user_id, speakers=conv.speakers,
        turns=[t.model_copy(update={"user_id": prefix + t.user_id}) for t in conv.turns],
        questions=conv.questions)


def spread_copies(conversations: Sequence[LocomoConversation], copies: int, partitions: int,
                  stem: str, order: Sequence[int] | None = None,
                  ) -> list[tuple[LocomoConversation, int]]:
    """Each conversation under `copies` user ids (`stem` + a tag + its own id), each copy's tag
    chosen so its user lands on the least loaded partition (ties in `order`, default 0, 1, …).
    Returns (the renamed conversation, its copy number) in conversation order."""
    order = list(order) if order else list(range(partitions))
    rank = {p: i for i, p in enumerate(order)}
    load = dict.fromkeys(range(partitions), 0)
    out: list[tuple[LocomoConversation, int]] = []
    for conv in conversations:
        for copy in range(copies):
            target = min(load, key=lambda p: (load[p], rank.get(p, len(rank))))
            tags = (f"{copy}" if n == 0 else f"{copy}.{n}" for n in range(1_000_000))
            prefix = next(f"{stem}{tag}-" for tag in tags
                          if partition_of(f"{stem}{tag}-{conv.user_id}", partitions) == target)
            load[target] += 1
            out.append((renamed(conv, prefix), copy))
    return out


def copy_label(name: str, copy: int, copies: int) -> str:
    """How a copy of conversation file `name` is named in the report (the name alone with one)."""
    return name if copies <= 1 else f"{name}#u{copy}"


# --- a worker's figures ---------------------------------------------------------------------------
def metric_total(exposition: str | None, name: str) -> float | None:
    """The sum of every sample of counter `name` (all its labels) in a Prometheus text
    exposition: 0 for a declared metric without a series yet (a labelled counter before its
    first increment); None when the text or the metric is not there (an older worker)."""
    by_nothing = metric_by_label(exposition, name, "")  # every sample under one key
    return None if by_nothing is None else sum(by_nothing.values())


def metric_by_label(exposition: str | None, name: str, label: str) -> dict[str, float] | None:
    """Counter `name`'s samples in a Prometheus text exposition, by the value of `label`
    (samples with the same value summed); None when the text or the metric is not there."""
    if exposition is None:
        return None
    family = name[:-len("_total")] if name.endswith("_total") else name
    values: dict[str, float] | None = None
    for metric in text_string_to_metric_families(exposition):
        if metric.name not in (family, name):
            continue
        values = values or {}
        for sample in metric.samples:
            if sample.name == name:
                key = sample.labels.get(label, "")
                values[key] = values.get(key, 0.0) + sample.value
    return values


def delta_by_label(before: dict[str, float] | None, after: dict[str, float] | None,
                   ) -> dict[str, float] | None:
    """`after` less `before`, label by label (a label not in `before`: from 0)."""
    if before is None or after is None:
        return None
    return {key: value - before.get(key, 0.0) for key, value in after.items()}


def delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def scaling_efficiency(turns_per_s: float, workers: int, single_worker_turns_per_s: float | None,
                       ) -> float | None:
    """turns/s ÷ (workers × one worker's turns/s); None without a one-worker figure."""
    if not single_worker_turns_per_s or single_worker_turns_per_s <= 0 or workers < 1:
        return None
    return round(turns_per_s / (workers * single_worker_turns_per_s), 3)


@dataclass
class WorkerRun:
    """One worker's share of a drain."""

    api_url: str
    partitions: list[int] = field(default_factory=list)
    """The `chat.turns` partitions it held (its /health `assigned`)."""
    turns: float | None = None  # its memstream_turns_total after - before
    cpu_seconds: float | None = None  # /proc: user + system, after - before (None: not ours)
    model_cpu_seconds: float | None = None  # its memstream_embed_cpu_seconds_total after - before
    stage_cpu_seconds: dict[str, float] | None = None
    """Its memstream_stage_cpu_seconds_total after - before, by stage."""
    thread_cpu_seconds: dict[str, float] | None = None
    """Its memstream_thread_cpu_seconds_total after - before, by thread."""


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _ms_per_turn(cpu_seconds: float | None, turns: float | None) -> float | None:
    return None if cpu_seconds is None or not turns else round(1000 * cpu_seconds / turns, 2)


def _cores_busy(cpu_seconds: float | None, seconds: float) -> float | None:
    return _round(None if cpu_seconds is None else cpu_seconds / max(seconds, 1e-9), 2)


def single_worker_cpu(run: WorkerRun, seconds: float) -> dict[str, Any]:
    """The one-worker drain's CPU (`--scaling`): cores busy, CPU and model CPU ms a turn."""
    return {"cores_busy": _cores_busy(run.cpu_seconds, seconds),
            "cpu_ms_per_turn": _ms_per_turn(run.cpu_seconds, run.turns),
            "model_ms_per_turn": _ms_per_turn(run.model_cpu_seconds, run.turns)}


def scale_out_report(workers: Sequence[WorkerRun], *, turns: int, seconds: float, partitions: int,
                     users: int, users_per_file: int, single_worker_turns_per_s: float | None,
                     single_worker_source: str | None, broker_cpu_seconds: float | None,
                     single_worker_cpu: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report's `scale_out` section (see the module doc)."""
    seconds = max(seconds, 1e-9)
    rate = turns / seconds
    rows = []
    for i, w in enumerate(workers):
        rows.append({
            "worker": i, "api_url": w.api_url, "partitions": w.partitions,
            "turns": None if w.turns is None else int(w.turns),
            "turn_share": (None if w.turns is None or not turns else round(w.turns / turns, 3)),
            "cpu_seconds": _round(w.cpu_seconds, 2),
            "cores_busy": _cores_busy(w.cpu_seconds, seconds),
            "cpu_ms_per_turn": _ms_per_turn(w.cpu_seconds, w.turns),
            "model_cpu_seconds": _round(w.model_cpu_seconds, 2),
            # One thread: near 1.0 the worker is at its ceiling, whatever the cores.
            "event_loop_cores_busy": _cores_busy((w.thread_cpu_seconds or {}).get("event_loop"),
                                                 seconds),
        })
    return {
        "workers": len(workers), "partitions": partitions, "users": users,
        "users_per_file": users_per_file, "turns": turns, "drain_seconds": round(seconds, 2),
        "turns_per_s": round(rate, 2),
        "single_worker_turns_per_s": single_worker_turns_per_s,
        "single_worker_source": single_worker_source,
        "single_worker_cpu": single_worker_cpu,
        "scaling_efficiency": scaling_efficiency(rate, len(workers), single_worker_turns_per_s),
        "broker_cores_busy": _round(None if broker_cpu_seconds is None else
                                    broker_cpu_seconds / seconds, 2),
        "per_worker": rows,
    }


def model_cpu(workers: Sequence[WorkerRun], turns: int, worker_ms_per_turn: float | None,
              ) -> dict[str, Any]:
    """`model_ms_per_turn` (every worker's model CPU over the turns) and `rest_ms_per_turn`
    (the workers' whole CPU per turn less it); None where a figure is missing."""
    used = [w.model_cpu_seconds for w in workers]
    known = [seconds for seconds in used if seconds is not None]
    model = 1000 * sum(known) / max(turns, 1) if used and len(known) == len(used) else None
    return {"model_ms_per_turn": _round(model, 2),
            "rest_ms_per_turn": (None if model is None or worker_ms_per_turn is None
                                 else round(worker_ms_per_turn - model, 2))}


def stage_cpu(workers: Sequence[WorkerRun], turns: int) -> dict[str, Any]:
    """`stages_ms_per_turn`: the event loop's CPU in each stage over the turns, every worker's
    summed, largest first (`streams.observability.stage_cpu`); None when a worker has none."""
    return {"stages_ms_per_turn": _summed_per_turn([w.stage_cpu_seconds for w in workers], turns)}


def thread_cpu(workers: Sequence[WorkerRun], turns: int) -> dict[str, Any]:
    """`threads_ms_per_turn`: the workers' CPU by thread over the turns, every worker's summed,
    largest first (`streams.observability.thread_cpu`); None when a worker has none."""
    return {"threads_ms_per_turn": _summed_per_turn([w.thread_cpu_seconds for w in workers], turns)}


def _summed_per_turn(counted: Sequence[dict[str, float] | None], turns: int) -> dict[str, float] | None:
    """CPU seconds by label, summed over the workers, in ms a turn, largest first."""
    if not counted or any(c is None for c in counted):
        return None
    total: dict[str, float] = {}
    for seconds_by_label in counted:
        for label, seconds in (seconds_by_label or {}).items():
            total[label] = total.get(label, 0.0) + seconds
    per_turn = {label: round(1000 * seconds / max(turns, 1), 2) for label, seconds in total.items()}
    return dict(sorted(per_turn.items(), key=lambda kv: -kv[1]))


# --- Kafka records and bytes -----------------------------------------------------------------------
def record_bytes(key: bytes | None, value: bytes | None,
                 headers: Iterable[tuple[str, bytes | None]] = ()) -> int:
    """A record's payload: key + value + every header's key and value, in bytes."""
    return (len(key or b"") + len(value or b"")
            + sum(len(k.encode()) + len(v or b"") for k, v in headers))


def written_ranges(before: Mapping[TopicPartition, int], after: Mapping[TopicPartition, int],
                   ) -> dict[TopicPartition, tuple[int, int]]:
    """The offsets written between two snapshots of end offsets, per partition that grew (a
    partition not in `before`, e.g. of a topic created since, from 0)."""
    return {tp: (before.get(tp, 0), end) for tp, end in after.items() if end > before.get(tp, 0)}


@dataclass
class TopicTraffic:
    records: int = 0
    bytes: int = 0


def per_turn(traffic: Mapping[str, TopicTraffic], turns: int) -> dict[str, Any]:
    """Records and bytes per turn, per topic (the most bytes first) and in total."""
    turns = max(turns, 1)
    topics = sorted(traffic, key=lambda t: (-traffic[t].bytes, t))
    records = sum(t.records for t in traffic.values())
    size = sum(t.bytes for t in traffic.values())
    return {
        "kafka_msgs_per_turn": {"total": round(records / turns, 2),
                                "by_topic": {t: round(traffic[t].records / turns, 3) for t in topics}},
        "kafka_bytes_per_turn": {"total": round(size / turns, 1),
                                 "by_topic": {t: round(traffic[t].bytes / turns, 1) for t in topics}},
        "kafka_written": {"records": records, "bytes": size, "topics": len(traffic),
                          "counted": "key + value + headers of each record written to any "
                                     "topic during the drain (changelogs included; offset "
                                     "commits and record-batch framing not)"},
    }


def _consumer(broker_url: str) -> AIOKafkaConsumer:
    from streams.tools.client import make_consumer

    return make_consumer(broker_url, enable_auto_commit=False,
                         max_partition_fetch_bytes=16 * 2**20, fetch_max_bytes=64 * 2**20)


async def broker_end_offsets(broker_url: str) -> dict[TopicPartition, int]:
    """The end offset of every partition of every topic on the broker (internal `__…` topics
    left out), corrected where the broker answers ListOffsets low (`streams.kafka.highwaters`)."""
    from streams.kafka.highwaters import true_end_offsets

    consumer = _consumer(broker_url)
    await consumer.start()
    try:
        topics = [t for t in await consumer.topics() if not t.startswith("__")]
        tps = [TopicPartition(t, p) for t in sorted(topics)
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        return await true_end_offsets(consumer, tps) if tps else {}
    finally:
        await consumer.stop()


async def settled_end_offsets(broker_url: str, interval: float = 0.5, limit: float = 15.0,
                              ) -> dict[TopicPartition, int]:
    """The broker's end offsets once two reads `interval` apart agree (the workers' last
    changelog writes, sent after a turn's progress record, have landed), or after `limit`."""
    deadline = time.monotonic() + limit
    last = await broker_end_offsets(broker_url)
    while time.monotonic() < deadline:
        await asyncio.sleep(interval)
        now = await broker_end_offsets(broker_url)
        if now == last:
            break
        last = now
    return last


async def read_written(broker_url: str, ranges: Mapping[TopicPartition, tuple[int, int]],
                       idle_timeout: float = 30.0) -> dict[str, TopicTraffic]:
    """The records of `ranges` read back, counted and sized (`record_bytes`) per topic."""
    traffic: dict[str, TopicTraffic] = {tp.topic: TopicTraffic() for tp in ranges}
    if not ranges:
        return traffic
    consumer = _consumer(broker_url)
    await consumer.start()
    try:
        consumer.assign(list(ranges))
        for tp, (start, _end) in ranges.items():
            consumer.seek(tp, start)
        pending = set(ranges)
        last = time.monotonic()
        while pending:
            batch = await consumer.getmany(*pending, timeout_ms=500)
            for tp, records in batch.items():
                end = ranges[tp][1]
                for r in records:
                    if r.offset < end:
                        traffic[tp.topic].records += 1
                        traffic[tp.topic].bytes += record_bytes(r.key, r.value, r.headers)
                last = time.monotonic()
            for tp in list(pending):
                if await consumer.position(tp) >= ranges[tp][1]:
                    pending.discard(tp)
            if pending and time.monotonic() - last > idle_timeout:
                raise TimeoutError(f"reading the run's records back: {len(pending)} partitions "
                                   f"unread after {idle_timeout:.0f}s")
    finally:
        await consumer.stop()
    return traffic
