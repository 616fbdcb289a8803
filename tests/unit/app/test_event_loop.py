"""The worker runs on uvloop (`streams.app.event_loop`)."""
from __future__ import annotations

import asyncio

import pytest
import uvloop

from streams.app.event_loop import use_uvloop
from streams.privacy.crypto import MasterKeyError
from streams.settings import Settings
from streams.worker import run_worker


def test_after_use_uvloop_every_new_loop_is_uvloops_and_runs_the_worker_s_kind_of_work() -> None:
    before = asyncio.get_event_loop_policy()
    try:
        use_uvloop()

        async def work() -> tuple[type, int]:
            # what a worker does: a thread's result awaited (the model), a timer, a task
            result = await asyncio.to_thread(sum, [1, 2, 3])
            await asyncio.wait_for(asyncio.create_task(asyncio.sleep(0)), timeout=5)
            return type(asyncio.get_running_loop()), result

        loop_type, result = asyncio.run(work())
        assert loop_type is uvloop.Loop and result == 6
    finally:
        asyncio.set_event_loop_policy(before)


def test_the_worker_chooses_uvloop_before_anything_else_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_worker` sets the policy first: here it stops at the missing master key, before it
    touches the broker, with uvloop already chosen."""
    before = asyncio.get_event_loop_policy()
    monkeypatch.delenv("MEMSTREAM_MASTER_KEY", raising=False)
    monkeypatch.delenv("MASTER_KEY_FILE", raising=False)
    try:
        with pytest.raises(MasterKeyError):
            run_worker(Settings())
        assert isinstance(asyncio.get_event_loop_policy(), uvloop.EventLoopPolicy)
    finally:
        asyncio.set_event_loop_policy(before)
