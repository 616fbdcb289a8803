"""Per-sink Prometheus metrics on the worker's registry (served at /metrics).

The names are a contract with the Grafana dashboards (`grafana/`): change them only together.
"""
from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from streams.observability.metrics import REGISTRY

RECORDS = Counter(
    "memstream_sink_records_total",
    "Records a sink finished with, by outcome (written, rejected, dead_lettered).",
    ["sink", "outcome"], registry=REGISTRY,
)
BATCH_SECONDS = Histogram(
    "memstream_sink_batch_duration_seconds",
    "Time to write one batch to a sink, retries included.",
    ["sink"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
RETRIES = Counter(
    "memstream_sink_retries_total", "Batch writes retried after a transient error.", ["sink"],
    registry=REGISTRY,
)
ERRORS = Counter(
    "memstream_sink_errors_total",
    "Errors of a sink, by kind (transient, partial, permanent, unexpected, dead_letter).",
    ["sink", "kind"], registry=REGISTRY,
)
BUFFERED = Gauge(
    "memstream_sink_buffered_records",
    "Records accepted by a sink and not yet written (the sink's lag).", ["sink"],
    registry=REGISTRY,
)
DEAD_LETTERS = Counter(
    "memstream_sink_dead_letters_total", "Records a sink sent to memory.sinks.dlq.", ["sink"],
    registry=REGISTRY,
)
