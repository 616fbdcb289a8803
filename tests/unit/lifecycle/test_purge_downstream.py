"""What a memory purged by the lifecycle does downstream: the vector sink deletes it (its
tombstone is not upserted), and the SSE replay buffer loses that memory's content only."""
from __future__ import annotations

from datetime import datetime, timezone

from sinks import routing
from streams.pipeline.recent_events import remember
from topics.events import MemoryEvent


def event(event_id: str, memory_id: str, kind: str = "created", summary: str = "Ana has a dog.",
          meta: dict | None = None) -> MemoryEvent:
    return MemoryEvent(event_id=event_id, kind=kind, user_id="ana", thread_id="t",  # type: ignore[arg-type]
                       memory_id=memory_id, rev=1, ts=datetime(2024, 5, 1, tzinfo=timezone.utc),
                       summary=summary, category="Personal", meta={"type": "semantic", **(meta or {})})


def test_the_vector_sink_deletes_a_purged_memory_whose_tombstone_is_still_in_the_table():
    tombstone = {"id": "m1", "user_id": "ana", "state": "purged", "summary": ""}
    [record] = routing.memory_records(event("p", "m1", "purged", "", {"reason": "purge_at"}), {},
                                      {"m1": tombstone})
    assert (record.op, record.key) == ("delete", "m1")


def test_a_lifecycle_purge_empties_the_sse_buffer_of_that_memory_only():
    buffer: list = []
    for event_id, memory_id in (("e1", "m1"), ("e2", "m2"), ("e3", "m1")):
        buffer = remember(buffer, event(event_id, memory_id), size=10) or buffer
    purged = remember(buffer, event("p", "m1", "purged", "", {"reason": "purge_at"}), size=10)
    assert [e["event_id"] for e in purged or []] == ["e2", "p"]
