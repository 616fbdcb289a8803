"""A worker's CPU by thread: `memstream_thread_cpu_seconds_total{thread}`.

A worker's threads, by what they do:

- `event_loop`: the main thread, which runs the worker's event loop (the stages, Faust, the
  producer, the web routes). One worker's ceiling: when it is busy a whole core, more cores do
  not help and another worker does (docs/capacity.md);
- `kafka_consumer`: Faust's consumer thread, aiokafka's fetcher on an event loop of its own
  (`KAFKA_CONSUMER_THREAD`, named by `streams.app.faust_compat.TunedConsumerThread`);
- `model`: the embedder's threads (`MODEL_THREAD_PREFIXES`: `local-int8`'s pool, Titan's calls);
- `other_python`: every other thread Python started (the loop's default executor: tokenising,
  table reads in a thread);
- `native`: the rest of the process: threads Python did not start (ONNX Runtime's, RocksDB's),
  and what a Python thread used after it was last read, if it has ended since.

Why: the stages' CPU (`memstream_stage_cpu_seconds_total`) and the model's
(`memstream_embed_cpu_seconds_total`) left "the rest" as one figure, and in a steady chat the
rest is most of a worker's CPU. Sampling profilers misplaced it (py-spy counts a thread waiting
for the GIL as running and overstated the consumer thread threefold against `/proc`). Each
Python thread's CPU clock (`pthread_getcpuclockid`) is read when the metrics are collected, so
nothing is added to the threads' own work. `bench locomo` reports it per turn
(`cpu.threads_ms_per_turn`).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

KAFKA_CONSUMER_THREAD = "kafka-consumer"
"""The name Faust's consumer thread is given when it starts."""
MODEL_THREAD_PREFIXES = ("embed", "titan-embed")
"""The embedders' threads' names start with one of these (their pools' `thread_name_prefix`)."""
ROLES = ("event_loop", "kafka_consumer", "model", "other_python", "native")


def role_of(thread: threading.Thread) -> str:
    """What `thread` does (module doc), from its name."""
    if thread is threading.main_thread():
        return "event_loop"
    if thread.name == KAFKA_CONSUMER_THREAD:
        return "kafka_consumer"
    if thread.name.startswith(MODEL_THREAD_PREFIXES):
        return "model"
    return "other_python"


def thread_cpu_seconds(thread: threading.Thread) -> float | None:
    """`thread`'s CPU seconds so far; None when it has ended (or never started)."""
    if thread.ident is None:
        return None
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (OSError, ProcessLookupError):  # the thread ended between the listing and the read
        return None


class ThreadCpu:
    """The process's CPU seconds by role, never decreasing: a thread that ended keeps, under
    its role, what it had used when it was last read."""

    def __init__(self, threads: Callable[[], list[threading.Thread]] = threading.enumerate,
                 process_seconds: Callable[[], float] = time.process_time) -> None:
        self._threads = threads
        self._process_seconds = process_seconds
        self._last: dict[int, tuple[str, float]] = {}
        """Per live Python thread (by `ident`): its role and CPU seconds when last read."""
        self._ended = dict.fromkeys(ROLES, 0.0)
        self._reported = dict.fromkeys(ROLES, 0.0)
        """What each role last answered: a counter never goes down, not even by a float sum's
        rounding (a thread's seconds move from the live sum to `_ended`, added in another order)
        or by the process clock read a little before the threads' (`native`)."""

    def by_role(self) -> dict[str, float]:
        """CPU seconds so far of each role in `ROLES`."""
        process = self._process_seconds()
        seen: dict[int, tuple[str, float]] = {}
        for thread in self._threads():
            seconds = thread_cpu_seconds(thread)
            if seconds is not None and thread.ident is not None:
                seen[thread.ident] = (role_of(thread), seconds)
        for ident, (role, seconds) in self._last.items():
            if ident not in seen:
                self._ended[role] += seconds
        self._last = seen
        totals = dict(self._ended)
        for role, seconds in seen.values():
            totals[role] += seconds
        python = sum(totals[role] for role in ROLES if role != "native")
        totals["native"] = max(0.0, process - python)
        for role in ROLES:
            totals[role] = max(totals[role], self._reported[role])
        self._reported = dict(totals)
        return totals


class ThreadCpuCollector(Collector):
    """`memstream_thread_cpu_seconds_total{thread}` from a `ThreadCpu`, read at each scrape."""

    def __init__(self, cpu: ThreadCpu | None = None) -> None:
        self.cpu = cpu or ThreadCpu()

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "memstream_thread_cpu_seconds",
            "CPU seconds of the worker's threads, by what they do: event_loop (the stages, Faust, "
            "the producer, the routes), kafka_consumer (aiokafka's fetcher), model, other_python, "
            "native (`streams/observability/thread_cpu.py`).", labels=["thread"])
        for role, seconds in self.cpu.by_role().items():
            family.add_metric([role], seconds)
        yield family
