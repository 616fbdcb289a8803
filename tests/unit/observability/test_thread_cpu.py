"""A worker's CPU by thread (streams/observability/thread_cpu.py)."""
from __future__ import annotations

import asyncio
import threading
import time

from streams.observability import metrics, thread_cpu
from streams.observability.thread_cpu import ROLES, ThreadCpu, role_of

SPIN_CPU_S = 0.05


class Spinner(threading.Thread):
    """A thread that uses `SPIN_CPU_S` of CPU (by its own clock, whatever the machine's speed),
    says so, and ends when told."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.spun = threading.Event()
        self.finish = threading.Event()

    def run(self) -> None:
        while time.thread_time() < SPIN_CPU_S:
            pass
        self.spun.set()
        self.finish.wait()


def test_a_thread_is_told_apart_by_what_it_does():
    assert role_of(threading.main_thread()) == "event_loop"
    assert role_of(threading.Thread(name="kafka-consumer")) == "kafka_consumer"
    assert role_of(threading.Thread(name="embed_1")) == "model"
    assert role_of(threading.Thread(name="titan-embed_0")) == "model"
    assert role_of(threading.Thread(name="asyncio_0")) == "other_python"


def test_a_threads_cpu_counts_under_its_role_and_stays_there_after_it_ends():
    cpu = ThreadCpu()
    before = cpu.by_role()
    assert set(before) == set(ROLES)
    model = Spinner("embed_7")
    model.start()
    model.spun.wait()
    running = cpu.by_role()
    assert running["model"] - before["model"] >= SPIN_CPU_S
    model.finish.set()
    model.join()
    ended = cpu.by_role()
    assert ended["model"] >= running["model"]  # a counter: an ended thread's CPU is kept
    assert all(ended[role] >= running[role] for role in ROLES)


def test_what_no_python_thread_used_is_the_native_threads():
    """The process's CPU less the Python threads' (a fake process clock: 10 s more than they)."""
    threads = [threading.main_thread()]
    main = thread_cpu.thread_cpu_seconds(threading.main_thread())
    assert main is not None
    cpu = ThreadCpu(threads=lambda: threads, process_seconds=lambda: main + 10.0)
    seconds = cpu.by_role()
    assert seconds["native"] >= 10.0 - 1.0  # the main thread ran a little between the two reads
    assert seconds["native"] <= 10.0


def test_the_worker_exports_its_threads_cpu_and_names_the_kafka_consumer_thread():
    from unittest import mock

    from mode.threads import QueueServiceThread

    from streams.app.faust_compat import TunedConsumerThread

    consumer = TunedConsumerThread.__new__(TunedConsumerThread)
    with mock.patch.object(QueueServiceThread, "on_thread_started") as faust_own:  # its queue
        started = threading.Thread(target=lambda: asyncio.run(consumer.on_thread_started()))
        started.start()
        started.join()
    assert started.name == "kafka-consumer"
    faust_own.assert_awaited_once()

    exposition = metrics.render().decode()
    for role in ROLES:
        assert f'memstream_thread_cpu_seconds_total{{thread="{role}"}}' in exposition


def test_no_role_goes_down_when_a_threads_seconds_move_to_the_ended_sum():
    """Float sums in another order can come out a hair lower (CI saw 18.808070635 after
    18.808070635000004): a counter must not, or Prometheus reads a reset."""
    from types import SimpleNamespace
    from unittest import mock

    seconds = {1: 0.1, 2: 0.3, 3: 0.7}  # (0.1 + 0.3) + 0.7 > (0.7 + 0.1) + 0.3
    threads = [SimpleNamespace(ident=ident, name=f"embed_{ident}") for ident in seconds]
    live = list(threads)
    cpu = ThreadCpu(threads=lambda: live, process_seconds=lambda: 2.0)
    with mock.patch.object(thread_cpu, "thread_cpu_seconds", lambda thread: seconds[thread.ident]):
        running = cpu.by_role()
        live.remove(threads[2])  # its 0.7 moves to the ended sum, added first
        ended = cpu.by_role()
    assert all(ended[role] >= running[role] for role in ROLES)
