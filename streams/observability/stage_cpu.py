"""The event loop's CPU by stage: what each stage's batches (and the lifecycle's runs inside
dedup's) use of the thread they run on, exported as `memstream_stage_cpu_seconds_total{stage}`.

A coroutine's CPU cannot be read around its `await`: while it waits (a send, the model in its
thread) the loop runs other tasks, and a `thread_time` difference would count theirs too.
`cpu_counted` drives the coroutine itself and reads the thread's CPU clock around each of its
steps, the stretches between two suspensions in which only it runs. A counted coroutine awaited
inside another (the lifecycle inside dedup) runs inside the outer one's steps: its CPU is its
own, and is taken out of the outer one's, so the stages add up without counting anything twice.
What no stage counts is the rest of the loop's work: Faust and the Kafka client (consuming,
producing, committing), the web routes, the timers.

Why: the model's CPU was already apart (`memstream_embed_cpu_seconds_total`); the rest of a
worker's CPU was one figure, and sampling profilers placed a sixth to two fifths of the loop's
samples in no Python frame at all (py-spy, without `--native`, could not follow uvloop's task
steps), so "where does the rest go" had no measured answer. `bench locomo` reports these per
turn (`cpu.stages_ms_per_turn`); Grafana shows them beside the model's.
"""
from __future__ import annotations

import threading
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar

from streams.observability import metrics

T = TypeVar("T")
Clock = Callable[[], int]
"""The calling thread's CPU time in ns (`time.thread_time_ns`; a test passes its own)."""

_open = threading.local()
"""Per thread: for each counted step running now (outermost first), the CPU its counted
coroutines inside have used so far in it."""


_counters: dict[str, Any] = {}
"""Each stage's series of `memstream_stage_cpu_seconds_total`, looked up once (the lifecycle's
is counted after every item dedup applies)."""


def _inner_steps() -> list[int]:
    steps = getattr(_open, "steps", None)
    if steps is None:
        steps = _open.steps = []
    return steps


@types.coroutine
def _driven(coro: Coroutine[Any, Any, T], spent: list[int], clock: Clock) -> Generator[Any, Any, T]:
    """Run `coro` to its end as the awaiting task would, adding each step's own CPU (less its
    counted coroutines' inside) to `spent[0]`."""
    inner = _inner_steps()
    value: Any = None
    error: BaseException | None = None
    while True:
        started = clock()
        inner.append(0)
        try:
            yielded = coro.send(value) if error is None else coro.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]  # the coroutine's own result
        finally:
            used = clock() - started
            spent[0] += used - inner.pop()
            if inner:
                inner[-1] += used
        try:
            value, error = (yield yielded), None
        except BaseException as exc:  # noqa: BLE001 - handed to the coroutine, as a task would
            value, error = None, exc


async def cpu_counted(stage: str, work: Awaitable[T], clock: Clock = time.thread_time_ns) -> T:
    """Await `work` (a coroutine), counting the CPU its steps use on this thread as `stage`'s in
    `memstream_stage_cpu_seconds_total` (module doc); counted when it ends, raised or not."""
    if not isinstance(work, Coroutine):
        return await work
    spent = [0]
    try:
        return await _driven(work, spent, clock)
    finally:
        counter = _counters.get(stage)
        if counter is None:
            counter = _counters[stage] = metrics.STAGE_CPU_SECONDS.labels(stage=stage)
        counter.inc(spent[0] / 1e9)
