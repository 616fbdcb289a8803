"""`bench locomo --offline` reports the stages' CPU on the event loop while the turns are
ingested (the model apart), and a digest of the memories the replay ended in: a change made for
speed is measured in seconds, and shown to change nothing."""
from __future__ import annotations

import asyncio
from datetime import datetime, timezone

from benchmarks import bench
from streams.memory.model import Memory

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _memory(i: int, summary: str = "Ana runs.") -> Memory:
    return Memory(id=f"m{i}", user_id="u", type="semantic", summary=summary, created_at=T0,
                  updated_at=T0, last_accessed=T0)


def test_the_digest_is_the_memories_whatever_their_order():
    one = {"u": [_memory(1), _memory(2)], "v": [_memory(3)]}
    same = {"v": [_memory(3)], "u": [_memory(2), _memory(1)]}
    other = {"u": [_memory(1), _memory(2, "Ana swims.")], "v": [_memory(3)]}
    assert bench.end_state_digest(one) == bench.end_state_digest(same)
    assert bench.end_state_digest(one) != bench.end_state_digest(other)
    assert len(bench.end_state_digest(one)) == 16


class _Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_the_stages_cpu_is_the_threads_cpu_while_the_turns_are_ingested(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(bench.time, "thread_time", clock)

    class Pipeline:
        async def ingest(self, turns):  # type: ignore[no-untyped-def]
            clock.now += 0.75  # the stages' work

    async def questions(*args):  # type: ignore[no-untyped-def]
        clock.now += 5.0  # asking is not ingesting
        return "report"

    monkeypatch.setattr(bench, "_ask_questions", questions)
    report, cpu = asyncio.run(bench._offline_recall(Pipeline(), [], []))
    assert report == "report" and cpu == 0.75
