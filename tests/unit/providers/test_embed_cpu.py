"""The embedding model's CPU, measured apart from the worker's (issue 22 item 1):
`streams.providers.embedders.cpu` and `memstream_embed_cpu_seconds_total`.

Nothing here asserts a duration: only that CPU done on a measured thread during a call is counted.
"""
from __future__ import annotations

import asyncio
import sys
import threading
import time

import numpy as np
import pytest

from streams.app.services import Services
from streams.observability.metrics import REGISTRY
from streams.providers.embedders import MINILM_INT8_PROFILE
from streams.providers.embedders.cpu import (
    CallCpu,
    embed_measured,
    helper_threads_since,
    native_threads,
    thread_clock_id,
    thread_cpu_ns,
)
from tests.unit.providers.conftest import settings

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread CPU clocks: Linux")


def burn(rounds: int = 200_000) -> int:
    total = 0
    for i in range(rounds):
        total += i * i % 7
    return total


def test_a_threads_clock_id_is_linuxs_make_thread_cpuclock():
    assert thread_clock_id(1234) == ((~1234) << 3) | 6


@linux
def test_the_calling_threads_clock_is_its_thread_time():
    tid = threading.get_native_id()
    before_clock, before_own = thread_cpu_ns(tid), time.thread_time_ns()
    burn()
    after_own, after_clock = time.thread_time_ns(), thread_cpu_ns(tid)
    assert after_clock - before_clock >= after_own - before_own > 0


@linux
def test_a_helper_threads_cpu_during_the_call_is_counted():
    """A native helper (standing in for an ONNX Runtime intra-op thread) works while the call
    waits for it: the call's CPU holds at least the helper's own CPU for that work."""
    go, done = threading.Event(), threading.Event()
    leave = threading.Event()  # a pool thread outlives the call: read its clock before it ends
    spent: list[int] = []
    ready = threading.Event()
    ids: list[int] = []

    def helper() -> None:
        ids.append(threading.get_native_id())
        ready.set()
        go.wait()
        started = time.thread_time_ns()
        burn()
        spent.append(time.thread_time_ns() - started)
        done.set()
        leave.wait()

    thread = threading.Thread(target=helper)
    thread.start()
    ready.wait()

    def call() -> str:
        go.set()
        done.wait()
        return "vectors"

    result, used = CallCpu(ids).measure(call)
    leave.set()
    thread.join()
    assert result == "vectors"
    assert used * 1e9 >= spent[0] > 0
    _, alone = CallCpu().measure(lambda: None)  # without it: only this thread's little CPU
    assert alone * 1e9 < spent[0]


@linux
def test_helper_threads_are_the_native_threads_a_library_starts():
    before = native_threads()
    python_thread = threading.Thread(target=time.sleep, args=(0.5,))
    python_thread.start()
    try:
        assert helper_threads_since(before) == frozenset()  # Python's own threads are not helpers
    finally:
        python_thread.join()


class Plain:
    """An embedder without its own measure: the calling thread's CPU is counted."""

    profile = MINILM_INT8_PROFILE

    def embed(self, texts):
        burn(20_000)
        return np.zeros((len(texts), 384), dtype=np.float32)


def test_an_embedder_without_its_own_measure_counts_the_calling_thread():
    vectors, used = embed_measured(Plain(), ["a", "b"])
    assert vectors.shape == (2, 384) and used > 0


def test_the_worker_counts_the_models_cpu_by_embedder():
    name = MINILM_INT8_PROFILE.name
    before = REGISTRY.get_sample_value("memstream_embed_cpu_seconds_total", {"embedder": name}) or 0.0
    services = Services(settings(), embedder=Plain())
    vectors = asyncio.run(services.embed(["one", "two", "three"]))
    assert vectors.shape == (3, 384)
    after = REGISTRY.get_sample_value("memstream_embed_cpu_seconds_total", {"embedder": name})
    assert after is not None and after > before
