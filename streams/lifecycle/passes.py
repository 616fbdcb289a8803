"""The contract of a lifecycle pass, shared by every pass the runner runs."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from streams.memory.state import MemoryState
from topics.events import MemoryEvent

PASS_ORDER = ("forgetting", "promotion", "consolidation", "insights")
"""The order the runner runs passes in (a pass with another name runs after these)."""


@runtime_checkable
class LifecyclePass(Protocol):
    """One background change to a user's memories, run at an event time.

    `now` is the partition's event-time watermark, never the wall clock. A pass changes memories
    with `state.store(...)`, announces each change with `state.announce(kind, memory, thread_id,
    now, meta, old=..., actor="lifecycle")` (the memory's own `thread_id`, or "lifecycle"), and
    returns the events (the runner sends them). It is bounded per call and idempotent: run twice
    at the same `now`, the second run changes nothing. Its per-user state lives in
    `state.tables.users[user_id][name]`.
    """

    name: str

    async def __call__(self, state: MemoryState, user_id: str, now: datetime) -> list[MemoryEvent]:
        ...


def ordered(passes: list[Any]) -> list[Any]:
    """`passes` in `PASS_ORDER` (stable for the others)."""
    rank = {name: position for position, name in enumerate(PASS_ORDER)}
    return sorted(passes, key=lambda p: rank.get(getattr(p, "name", ""), len(PASS_ORDER)))


LIFECYCLE_THREAD = "lifecycle"
"""The thread a change to a memory with no thread of its own is announced in."""
ACTOR = "lifecycle"
"""The actor of every change a lifecycle pass makes (audit entries)."""


def thread_of(memory: Any) -> str:
    """The thread a change of `memory` is announced on."""
    return memory.thread_id or LIFECYCLE_THREAD
