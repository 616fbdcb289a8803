"""The event loop's CPU by stage, step by step (`streams.observability.stage_cpu`, issue 22)."""
from __future__ import annotations

import asyncio

import pytest

from streams.observability.metrics import REGISTRY
from streams.observability.stage_cpu import cpu_counted


class WorkClock:
    """A thread CPU clock that moves only when the test says work was done."""

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns

    def work(self, ns: int) -> None:
        self.ns += ns


def counted(stage: str) -> float:
    return (REGISTRY.get_sample_value("memstream_stage_cpu_seconds_total", {"stage": stage}) or 0.0) * 1e9


async def test_a_stage_counts_its_own_steps_not_what_runs_while_it_waits() -> None:
    clock = WorkClock()
    other_ran = asyncio.Event()

    async def other_task() -> None:
        clock.work(100)  # another task's work, while the stage waits
        other_ran.set()

    async def stage() -> str:
        clock.work(3)
        task = asyncio.ensure_future(other_task())
        await other_ran.wait()
        clock.work(4)
        await task
        return "done"

    before = counted("test-own")
    assert await cpu_counted("test-own", stage(), clock) == "done"
    assert counted("test-own") - before == pytest.approx(7)


async def test_a_counted_coroutine_inside_another_is_its_own_and_not_the_outer_ones() -> None:
    clock = WorkClock()

    async def lifecycle() -> None:
        clock.work(5)
        await asyncio.sleep(0)  # a suspension inside: its next step runs inside the outer's
        clock.work(1)

    async def dedup() -> None:
        clock.work(2)
        await cpu_counted("test-inner", lifecycle(), clock)
        clock.work(3)

    outer, inner = counted("test-outer"), counted("test-inner")
    await cpu_counted("test-outer", dedup(), clock)
    assert counted("test-inner") - inner == pytest.approx(6)
    assert counted("test-outer") - outer == pytest.approx(5)


async def test_a_stage_that_raises_is_counted_and_its_error_reaches_the_caller() -> None:
    clock = WorkClock()

    async def failing() -> None:
        clock.work(2)
        await asyncio.sleep(0)
        clock.work(1)
        raise ValueError("bad record")

    before = counted("test-raises")
    with pytest.raises(ValueError, match="bad record"):
        await cpu_counted("test-raises", failing(), clock)
    assert counted("test-raises") - before == pytest.approx(3)


async def test_a_cancelled_stage_is_cancelled_where_it_waits() -> None:
    clock = WorkClock()
    waiting, cleaned = asyncio.Event(), []

    async def stage() -> None:
        clock.work(2)
        try:
            waiting.set()
            await asyncio.Event().wait()
        finally:
            cleaned.append(True)

    task = asyncio.ensure_future(cpu_counted("test-cancelled", stage(), clock))
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == [True]
