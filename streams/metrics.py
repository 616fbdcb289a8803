"""Prometheus metrics of the worker, served at /metrics (names follow Prometheus conventions)."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

REGISTRY = CollectorRegistry(auto_describe=True)

DLQ_RECORDS = Counter(
    "memstream_dlq_records_total", "Records sent to a dead-letter topic.", ["stage", "reason"],
    registry=REGISTRY,
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
DECISIONS = Counter(
    "memstream_dedup_decisions_total", "Dedup outcomes.", ["type", "decision"], registry=REGISTRY
)
SIMILARITY = Histogram(
    "memstream_dedup_similarity", "Best-neighbour cosine similarity seen by dedup.",
    buckets=(0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.92, 0.95, 0.98, 1.0), registry=REGISTRY,
)
COMMANDS = Counter(
    "memstream_commands_total", "Commands applied.", ["kind"], registry=REGISTRY
)
STAGE_SECONDS = Histogram(
    "memstream_stage_duration_seconds", "Processing time of one record per stage.", ["stage"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5), registry=REGISTRY,
)
QUERY_SECONDS = Histogram(
    "memstream_query_duration_seconds", "Time to answer a memory query.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1), registry=REGISTRY,
)


def render() -> bytes:
    """The text exposition of every memstream metric."""
    return generate_latest(REGISTRY)
