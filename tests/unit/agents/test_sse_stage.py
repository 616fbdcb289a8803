"""Faust test_context tests of the sse stage: `memory.events` into each user's replay buffer (a
ring of chunks in `recent_events`, streams/pipeline/recent_events.py) and out to connected clients."""
from __future__ import annotations

from datetime import datetime, timezone

from streams.api.state import WebState
from streams.pipeline.recent_events import RecentEvents, head_key
from streams.privacy.payloads import seal_event
from streams.privacy.sealed import SealedTable
from tests.unit.agents.conftest import data_view
from tests.legacy_events import batched_record
from topics.events import MemoryEvent
from topics.events_wire import event_value

TS = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


def event(event_id: str, user: str = "u1", kind: str = "created", summary: str = "Ana has a dog.",
          memory_id: str = "m1") -> MemoryEvent:
    return MemoryEvent(event_id=event_id, kind=kind, user_id=user, thread_id="t1",  # type: ignore[arg-type]
                       memory_id=memory_id, rev=1, ts=TS, summary=summary, category="Personal")


async def put(worker, *events: MemoryEvent) -> None:
    sealer = data_view(worker, "recent_events").sealer  # a test may not write user_keys itself
    async with worker.faust.agents["sse"].test_context() as agent:
        for e in events:
            await agent.put(event_value(seal_event(sealer, e)), key=e.user_id.encode())


def buffered(worker, user: str = "u1") -> list[str]:
    ring = RecentEvents(worker.sealed.recent_events, worker.settings.api.sse_replay_events)
    return [e["event_id"] for e in ring.events(user)]


async def test_events_are_buffered_per_user_and_published_once(worker):
    subscriber = WebState.of(worker.faust).hub.subscribe("u1")
    await put(worker, event("e1"), event("x1", user="u2"), event("e2"))
    await put(worker, event("e2"), event("e3"))  # e2 replayed
    assert buffered(worker) == ["e1", "e2", "e3"] and buffered(worker, "u2") == ["x1"]
    published = [subscriber.queue.get_nowait()["event_id"] for _ in range(subscriber.queue.qsize())]
    assert published == ["e1", "e2", "e3"]
    stored = worker.tables.recent_events.data
    assert head_key("u1") in stored and "u1" not in stored, "the ring's keys, not the user id"
    assert "Ana has a dog" not in repr(stored), "sealed"


async def test_a_record_of_a_batchs_events_written_before_buffers_each_in_order(worker):
    """A record of the form written before one event a record (a user's events of a batch,
    deflated: `tests.legacy_events`) still reads, next to the records of one event (`put`)."""
    subscriber = WebState.of(worker.faust).hub.subscribe("u1")
    sealer = data_view(worker, "recent_events").sealer
    record = batched_record([event_value(seal_event(sealer, event(f"e{i}"))) for i in range(3)])
    async with worker.faust.agents["sse"].test_context() as agent:
        await agent.put(record, key=b"u1")
    await put(worker, event("e3"))
    assert buffered(worker) == ["e0", "e1", "e2", "e3"]
    assert [subscriber.queue.get_nowait()["event_id"] for _ in range(4)] == ["e0", "e1", "e2", "e3"]


async def test_a_buffer_written_before_the_ring_is_resumed_and_converted(worker):
    """Tables written by the format before the ring (one sealed list under the user id) are
    read after the upgrade, and converted by the stage's next write."""
    old = data_view(worker, "recent_events")
    legacy = SealedTable(old.table, old.sealer, lambda key, value: key)
    legacy["u1"] = [event(f"e{i}").model_dump(mode="json") for i in range(3)]
    assert buffered(worker) == ["e0", "e1", "e2"]
    await put(worker, event("e2"), event("e3"))
    assert buffered(worker) == ["e0", "e1", "e2", "e3"]
    assert "u1" not in worker.tables.recent_events.data
