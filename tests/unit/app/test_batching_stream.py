"""The worker's stream batches without polling while idle (`streams.app.batching_stream`, issue 22).

A Faust app that is never started (Faust's agent test context hands the agent its records), its
streams of the worker's class: each wait of `take_events` is recorded with its timeout.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import faust
import pytest

from streams.app.batching_stream import BatchingStream


class Waits:
    """The timeouts of the stream's waits, in order (None: no timeout)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.timeouts: list[Any] = []
        self._changed = asyncio.Condition()
        original = BatchingStream.wait_for_stopped

        async def recorded(stream: BatchingStream, *coros: Any, timeout: Any = None) -> bool:
            async with self._changed:
                self.timeouts.append(timeout)
                self._changed.notify_all()
            return await original(stream, *coros, timeout=timeout)
        monkeypatch.setattr(BatchingStream, "wait_for_stopped", recorded)

    async def first(self, n: int) -> list[Any]:
        """The first `n` waits' timeouts, once there have been `n` waits."""
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.timeouts) >= n)
        return self.timeouts[:n]


def batching_agent(tmp_path: Path, size: int, within: float, batches: list[list[int]]) -> Any:
    app = faust.App("test-batching", broker="kafka://localhost:1", store="memory://",
                    Stream=BatchingStream, datadir=str(tmp_path))

    @app.agent()
    async def batcher(stream: Any) -> AsyncIterator[int]:
        async for events in stream.take_events(size, within=within):
            batches.append([event.value for event in events])
            for event in events:
                yield event.value
    return batcher


async def test_an_idle_stream_waits_for_a_record_with_no_timeout_and_a_lone_one_goes_within(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    waits, batches = Waits(monkeypatch), []
    async with batching_agent(tmp_path, 3, 0.01, batches).test_context() as agent:
        assert await waits.first(1) == [None], "idle: nothing wakes it before a record comes"
        await agent.put(1)
        assert batches == [[1]]
        assert await waits.first(3) == [None, 0.01, None], \
            "from its first record up to `within`, then idle again with no timeout"


async def test_a_full_batch_goes_at_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    waits, batches = Waits(monkeypatch), []
    async with batching_agent(tmp_path, 3, 3600.0, batches).test_context() as agent:
        await asyncio.gather(agent.put(1), agent.put(2), agent.put(3))
        assert batches == [[1, 2, 3]]
        assert await waits.first(2) == [None, 3600.0]
