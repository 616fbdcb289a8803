"""The CPU an embedding model's calls use, apart from the rest of the worker's.

A model call runs on the thread that calls it and, for ONNX Runtime, on the intra-op threads of
its session (created with the session, idle between calls when they do not spin). Its CPU is the
calling thread's CPU time over the call (`time.thread_time`) plus that of those helper threads,
read from Linux's per-thread CPU clocks (what `pthread_getcpuclockid` returns for a thread of
this process, built here from the thread's id). Elsewhere than Linux the helper threads read as
0 and only the calling thread counts.

The worker exports the sum as `memstream_embed_cpu_seconds_total{embedder}`
(`streams.app.services.Services.embed`); `bench locomo` reports it per turn
(`cpu.model_ms_per_turn`) apart from the worker's whole CPU.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

_PERTHREAD_SCHED_CLOCK = 6  # CPUCLOCK_PERTHREAD_MASK (4) | CPUCLOCK_SCHED (2), linux/posix-timers.h


def thread_clock_id(tid: int) -> int:
    """The clock id of native thread `tid`'s CPU clock (Linux: `MAKE_THREAD_CPUCLOCK`)."""
    return ((~tid) << 3) | _PERTHREAD_SCHED_CLOCK


def thread_cpu_ns(tid: int) -> int | None:
    """CPU time of native thread `tid` of this process in ns (None: gone, or not Linux)."""
    try:
        return time.clock_gettime_ns(thread_clock_id(tid))
    except (OSError, AttributeError, OverflowError):
        return None


def native_threads() -> set[int]:
    """The native thread ids of this process (empty where /proc is not there)."""
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def _comm(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


def helper_threads_since(before: Collection[int]) -> frozenset[int]:
    """Native threads started since `before` that are not Python threads (a library's own,
    e.g. an ONNX Runtime session's intra-op pool) nor RocksDB's (which names its threads
    `rocksdb:…` and may start one at the same moment in a worker)."""
    python = {t.native_id for t in threading.enumerate()}
    return frozenset(t for t in native_threads() - set(before) - python
                     if not _comm(t).startswith("rocksdb"))


class CallCpu:
    """Measures the CPU of calls made on the calling thread plus `helpers` (native thread ids).

    Calls must not overlap while measured (the helpers' CPU is read as a whole): an embedder
    measures under the lock that already keeps its calls one at a time."""

    def __init__(self, helpers: Collection[int] = ()) -> None:
        self.helpers = frozenset(helpers)

    def _helpers_ns(self) -> dict[int, int]:
        return {t: ns for t in self.helpers if (ns := thread_cpu_ns(t)) is not None}

    def measure(self, call: Callable[[], Any]) -> tuple[Any, float]:
        """`call()`'s result and the CPU seconds it used (this thread's and the helpers')."""
        helpers = self._helpers_ns()
        own = time.thread_time_ns()
        result = call()
        used = time.thread_time_ns() - own
        after = self._helpers_ns()
        used += sum(after[t] - ns for t, ns in helpers.items() if t in after)
        return result, used / 1e9


def embed_measured(embedder: Any, texts: Sequence[str]) -> tuple[np.ndarray, float]:
    """`embedder.embed(texts)` and the model's CPU seconds for it: the embedder's own
    measure when it has one (`embed_measured`, with its helper threads), else the calling
    thread's CPU time over the call. Run it on the thread that makes the call."""
    own = getattr(embedder, "embed_measured", None)
    if own is not None:
        return own(texts)
    return CallCpu().measure(lambda: embedder.embed(texts))
