"""Prometheus metrics of the worker, served at /metrics (names follow Prometheus conventions).

Everything is on one registry, `REGISTRY`: the LLM providers' metrics are in
`streams/providers/llm/metrics.py`, the sinks' in `sinks/metrics.py`. The Grafana dashboards of
`grafana/dashboards/` and the alert rules of `deploy/alerts.yml` name these metrics;
`tests/integration/test_metrics_dashboards.py` fails when a panel names one that a running worker
does not export, and `tests/integration/test_prometheus.py` when a panel's query has no data in a
real Prometheus after a replay or an alert does not fire: rename them all together.

Labels never carry user ids, memory ids or text: only small fixed vocabularies (stage, type,
outcome, reason), plus topic and partition for the consumer lag.
"""
from __future__ import annotations

from typing import get_args

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from streams.observability.thread_cpu import ThreadCpuCollector
from topics.commands import CommandKind
from topics.proactivity import ProactivityReason

REGISTRY = CollectorRegistry(auto_describe=True)
REGISTRY.register(ThreadCpuCollector())  # memstream_thread_cpu_seconds_total{thread}, read at each scrape

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
_SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.92, 0.94, 0.96, 0.98, 1.0)

# --- stages: throughput, latency, what became of the inputs ---------------------------------------
STAGE_RECORDS = Counter(
    "memstream_stage_records_total", "Input records a stage took (any outcome, dead-lettered included).",
    ["stage"], registry=REGISTRY,
)
STAGE_SECONDS = Histogram(
    "memstream_stage_duration_seconds", "Processing time of one record per stage.", ["stage"],
    buckets=_LATENCY_BUCKETS, registry=REGISTRY,
)
TABLE_WRITES = Counter(
    "memstream_table_writes_total",
    "Table writes the stages made (`held`) and those made to the tables at their batches' ends "
    "(`flushed`: one per key per batch, `streams/pipeline/write_cache.py`).", ["phase"],
    registry=REGISTRY,
)
STAGE_QUEUED_SECONDS = Histogram(
    "memstream_stage_queued_seconds",
    "How long a record waited before its stage took it (from its produce timestamp).", ["stage"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120),
    registry=REGISTRY,
)
DLQ_RECORDS = Counter(
    "memstream_dlq_records_total", "Records sent to a dead-letter topic.", ["stage", "reason"],
    registry=REGISTRY,
)
DLQ_FAILURES = Counter(
    "memstream_dlq_failures_total",
    "Dead letters that could not be sent; the record was skipped (logged without content).",
    ["stage", "reason"], registry=REGISTRY,
)
STAGE_ERRORS = Counter(
    "memstream_stage_errors_total",
    "Unexpected errors while a stage handled a record (the record was retried, or with "
    "STAGE_ON_BUG=dead_letter dead-lettered once its retries were spent).",
    ["stage", "error"], registry=REGISTRY,
)
STAGE_RETRIES = Counter(
    "memstream_stage_retries_total",
    "Failed attempts at a record a stage retried (kind: transient — a passing fault; bug — "
    "anything else): the partition waited instead of dead-lettering (streams/pipeline/retries.py).",
    ["stage", "kind"], registry=REGISTRY,
)
STAGE_STALLED = Gauge(
    "memstream_stage_stalled",
    "1 while a stage is stalled on a record that failed every retry (/health is not ready).",
    ["stage"], registry=REGISTRY,
)
TURNS = Counter(
    "memstream_turns_total", "Chat turns consumed, by ingest outcome.", ["outcome"], registry=REGISTRY
)
CANDIDATES = Counter(
    "memstream_candidates_total", "Facts extracted and sent to dedup.", ["type"], registry=REGISTRY
)
POLICY_BLOCKS = Counter(
    "memstream_policy_blocked_total", "Facts dropped by the safety policy.", ["reason"],
    registry=REGISTRY,
)
COMMANDS = Counter(
    "memstream_commands_total", "Commands applied.", ["kind"], registry=REGISTRY
)

# --- memory decisions (seed 003 §Observability) ----------------------------------------------------
DECISIONS = Counter(
    "memstream_dedup_decisions_total",
    "Dedup outcomes (created, updated, superseded, duplicate) by the stored memory's type.",
    ["type", "decision"], registry=REGISTRY,
)
SEMANTIC_CREATES = Counter(
    "memstream_semantic_creates_total", "New semantic memories (seed 003 semantic_creates).",
    registry=REGISTRY,
)
SEMANTIC_UPDATES = Counter(
    "memstream_semantic_updates_total",
    "Semantic memories changed by a new fact (seed 003 semantic_updates): kind=merge folds it into "
    "the existing memory, kind=supersede replaces a changed value.",
    ["kind"], registry=REGISTRY,
)
EPISODIC_CREATES = Counter(
    "memstream_episodic_creates_total", "New episodes (seed 003 episodic_creates).", registry=REGISTRY,
)
EPISODIC_MERGES = Counter(
    "memstream_episodic_merges_total",
    "Episodes merged into the last one of the same theme within the window (seed 003 episodic_merges).",
    registry=REGISTRY,
)
EPISODIC_SKIPS = Counter(
    "memstream_episodic_skips_total",
    "Episodes due (outcome or buffer overflow) but not written (seed 003 episodic_skips): cooldown, "
    "daily_cap, no_topic, blocked_topic, or duplicate (dedup found it stored already).",
    ["reason"], registry=REGISTRY,
)
LIFECYCLE_TRANSITIONS = Counter(
    "memstream_lifecycle_transitions_total",
    "Memory changes made by the event-time lifecycle, by pass and event kind (soft_deleted, "
    "purged, archived, consolidated, promoted...).",
    ["lifecycle_pass", "kind"], registry=REGISTRY,
)
LIFECYCLE_RUNS = Counter(
    "memstream_lifecycle_runs_total",
    "Lifecycle runs for one user, by trigger (active: the user's own record; idle: the partition's "
    "watermark passed the user's due time).", ["trigger"], registry=REGISTRY,
)
LIFECYCLE_REDELIVERED = Counter(
    "memstream_lifecycle_redelivered_total",
    "Redelivered records (after a crash or a rebalance) whose lifecycle work was made again from "
    "the partition's outbox instead of run again; writes: the table writes made again (those "
    "that had not landed).", ["what"], registry=REGISTRY,
)
LIFECYCLE_ERRORS = Counter(
    "memstream_lifecycle_errors_total",
    "Lifecycle passes that failed for one user (logged; the partition moved on).",
    ["lifecycle_pass", "error"], registry=REGISTRY,
)
WRITE_BUDGET_OVER = Counter(
    "memstream_write_budget_over_total",
    "New memories past the user's MEMORY_WRITE_RATE_LIMIT_PER_HOUR, stored down-ranked.",
    registry=REGISTRY,
)
SIMILARITY = Histogram(
    "memstream_dedup_similarity",
    "Best same-type neighbour's cosine similarity seen by dedup (seed 003 similarity_scores).",
    ["type"], buckets=_SCORE_BUCKETS, registry=REGISTRY,
)
NOTABILITY = Histogram(
    "memstream_episodic_notability",
    "Novelty of an episode: 1 - its best similarity to the user's episodes, 1 with none "
    "(seed 003 notability_scores).",
    buckets=_SCORE_BUCKETS, registry=REGISTRY,
)
DECISION_SECONDS = Histogram(
    "memstream_decision_duration_seconds",
    "Time to decide and apply one candidate in dedup, a same-fact LLM call included "
    "(seed 003 decision_latencies).",
    ["type"], buckets=_LATENCY_BUCKETS, registry=REGISTRY,
)

# --- serving --------------------------------------------------------------------------------------
QUERY_SECONDS = Histogram(
    "memstream_query_duration_seconds", "Time to answer a memory query.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1), registry=REGISTRY,
)
HTTP_CONNECTIONS_OPEN = Gauge(
    "memstream_http_connections_open",
    "HTTP connections the worker's web server holds open now, event streams included "
    "(`streams/api/connections.py`).", registry=REGISTRY,
)
HTTP_CONNECTIONS_MAX = Gauge(
    "memstream_http_connections_max",
    "The most HTTP connections the web server holds open at once (WEB_MAX_CONNECTIONS, or what "
    "it came to from the open-file limit).", registry=REGISTRY,
)
HTTP_CONNECTIONS_REFUSED = Counter(
    "memstream_http_connections_refused_total",
    "HTTP connections answered 503 and closed as they opened: the web server held its most.",
    registry=REGISTRY,
)
HTTP_CONNECTIONS_CLOSED = Counter(
    "memstream_http_connections_closed_total",
    "HTTP connections the web server closed for taking too long: header_timeout (a request's line "
    "and headers), body_timeout (its body), idle_timeout (kept alive with no request).",
    ["reason"], registry=REGISTRY,
)
HTTP_CLOSE_REASONS = ("header_timeout", "body_timeout", "idle_timeout")

# --- embedding provider ---------------------------------------------------------------------------
EMBED_SECONDS = Histogram(
    "memstream_embed_duration_seconds", "Time of one embedding call (a batch of texts), by embedder.",
    ["embedder"], buckets=_LATENCY_BUCKETS, registry=REGISTRY,
)
EMBED_TEXTS = Counter(
    "memstream_embedded_texts_total", "Texts embedded, by embedder.", ["embedder"], registry=REGISTRY,
)
EMBED_CPU_SECONDS = Counter(
    "memstream_embed_cpu_seconds_total",
    "CPU seconds of the embedding model's calls, by embedder: the calling thread's and the "
    "model's own threads' (ONNX Runtime's intra-op pool), not the rest of the worker "
    "(`streams/providers/embedders/cpu.py`).", ["embedder"], registry=REGISTRY,
)
EMBED_REQUESTS = Counter(
    "memstream_embed_requests_total",
    "Requests to a remote embedder's server (EMBEDDER=openai), each attempt, by embedder and "
    "outcome: ok, throttled, unavailable, timeout, request_error, invalid_answer, dimension_changed.",
    ["embedder", "outcome"], registry=REGISTRY,
)
STAGE_CPU_SECONDS = Counter(
    "memstream_stage_cpu_seconds_total",
    "CPU seconds of the event loop's thread in each stage's batches, and in the lifecycle's "
    "runs (apart from dedup's), each step of their coroutines read on its own; not the model's "
    "threads, nor Faust's and the Kafka client's work (`streams/observability/stage_cpu.py`).",
    ["stage"], registry=REGISTRY,
)

# --- Kafka ----------------------------------------------------------------------------------------
CONSUMER_LAG = Gauge(
    "memstream_consumer_lag_records",
    "Records between the consumer's position and the partition's highwater, per assigned "
    "input partition of this worker (updated by a timer; `streams/observability/consumer_lag.py`).",
    ["topic", "partition"], registry=REGISTRY,
)

_SEMANTIC_UPDATE_KIND = {"updated": "merge", "superseded": "supersede"}


def record_decision(memory_type: str, outcome: str, similarity: float | None, seconds: float) -> None:
    """Count one first-time dedup decision (never a replay) in the seed 003 vocabulary.

    `memory_type` is the stored memory's type (a fact correction said as an event is semantic),
    `similarity` the best same-type neighbour's score (None: the user had none).
    """
    DECISIONS.labels(type=memory_type, decision=outcome).inc()
    DECISION_SECONDS.labels(type=memory_type).observe(seconds)
    if similarity is not None:
        SIMILARITY.labels(type=memory_type).observe(similarity)
    if memory_type == "semantic":
        if outcome == "created":
            SEMANTIC_CREATES.inc()
        elif outcome in _SEMANTIC_UPDATE_KIND:
            SEMANTIC_UPDATES.labels(kind=_SEMANTIC_UPDATE_KIND[outcome]).inc()
    elif memory_type == "episodic":
        NOTABILITY.observe(1.0 - similarity if similarity is not None else 1.0)
        if outcome in ("created", "superseded"):
            EPISODIC_CREATES.inc()
        elif outcome == "updated":
            EPISODIC_MERGES.inc()
        else:
            EPISODIC_SKIPS.labels(reason="duplicate").inc()


def render() -> bytes:
    """The text exposition of every memstream metric."""
    return generate_latest(REGISTRY)

PROACTIVITY_CANDIDATES = Counter(
    "memstream_proactivity_candidates_total",
    "Proactivity candidates sent to memory.proactivity, by reason.", ["reason"], registry=REGISTRY,
)


# --- every known label value starts at 0 ----------------------------------------------------------
# A labelled counter has no series until its first increment, so a panel or an alert over a quiet
# one reads "No data" instead of 0. Where a label's values are open (a dead letter's or a policy
# block's reason, an exception's type, the events a pass makes), one series per stage or pass
# leaves that label empty (Prometheus stores no empty label): its sums read 0 until a value comes.
STAGES = ("ingest", "dedup", "commands")
LIFECYCLE_PASSES = ("forgetting", "promotion", "consolidation", "insights", "consent")


def _start_at_zero() -> None:
    for stage in STAGES:
        STAGE_RECORDS.labels(stage=stage)
        STAGE_STALLED.labels(stage=stage)  # 0: not stalled (a gauge's child starts at 0)
        DLQ_RECORDS.labels(stage=stage, reason="")
        DLQ_FAILURES.labels(stage=stage, reason="")
    for outcome in ("candidates", "skipped", "command", "dlq"):
        TURNS.labels(outcome=outcome)
    for kind in get_args(CommandKind):
        COMMANDS.labels(kind=kind)
    POLICY_BLOCKS.labels(reason="")
    for kind in _SEMANTIC_UPDATE_KIND.values():
        SEMANTIC_UPDATES.labels(kind=kind)
    for reason in ("cooldown", "daily_cap", "no_topic", "blocked_topic", "duplicate"):
        EPISODIC_SKIPS.labels(reason=reason)
    for trigger in ("active", "idle"):
        LIFECYCLE_RUNS.labels(trigger=trigger)
    for what in ("records", "writes"):
        LIFECYCLE_REDELIVERED.labels(what=what)
    for lifecycle_pass in LIFECYCLE_PASSES:
        LIFECYCLE_TRANSITIONS.labels(lifecycle_pass=lifecycle_pass, kind="")
    for lifecycle_pass in ("runner", *LIFECYCLE_PASSES):  # "runner": a failure around the passes
        LIFECYCLE_ERRORS.labels(lifecycle_pass=lifecycle_pass, error="")
    for reason in get_args(ProactivityReason):
        PROACTIVITY_CANDIDATES.labels(reason=reason)
    for reason in HTTP_CLOSE_REASONS:
        HTTP_CONNECTIONS_CLOSED.labels(reason=reason)


_start_at_zero()
