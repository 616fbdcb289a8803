"""The write budget (issue 12 item 8): `MEMORY_WRITE_RATE_LIMIT_PER_HOUR` new memories per user
per event-time hour.

Counted in the user's `users` record (`write_budget`: [event time, memory id] of the new
memories of the last hour, at most `limit` of them), by id, so a replay counts the same. Past the budget a new fact
is not dropped: it is stored down-ranked (importance 1, tag `over_write_budget`), so it ranks
below the user's other memories and the lifecycle forgets it first. Only plain creations count
and are limited (seed 002: hot-path writes, so not episodes, which are captured after the turn):
an update, a merge and a correction (a supersede) change what is known and are never limited,
nor is a fact the user asked to keep (pinned).
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from streams.memory import users
from streams.memory.model import Memory
from streams.memory.tables import Table

WINDOW = timedelta(hours=1)
KEY = "write_budget"
OVER_TAG = "over_write_budget"


def _recent(info: dict[str, Any], ts: datetime) -> dict[str, str]:
    """The counted memories of the hour before `ts`: memory id -> event time. (Records written
    before ids were kept list bare times: they count under a placeholder id.)"""
    recent = {}
    for n, entry in enumerate(info.get(KEY, [])):
        at, memory_id = (entry, f"#{n}") if isinstance(entry, str) else entry
        if ts - WINDOW < datetime.fromisoformat(at) <= ts:
            recent[memory_id] = at
    return recent


def spend(table: Table, user_id: str, ts: datetime, limit: int, memory_id: str) -> bool:
    """Count new memory `memory_id` of the user at event time `ts`; False when the hour's budget
    is spent (then nothing is counted). `limit` 0: no budget.

    Counted by memory id, so counting a memory again (its replay after a crash) is a no-op."""
    if limit <= 0:
        return True
    info = users.user_info(table, user_id, ts)
    recent = _recent(info, ts)
    if memory_id in recent:
        return True
    if len(recent) >= limit:
        return False
    _store(table, user_id, info, {**recent, memory_id: ts.isoformat()})
    return True


def recount(table: Table, user_id: str, ts: datetime, limit: int, memory: Memory) -> None:
    """Count `memory` again if it was stored within the budget: a memory written before a crash
    whose `users` write did not land (its replay finds the memory and must not spend again)."""
    if limit <= 0 or OVER_TAG in memory.tags:
        return
    info = users.user_info(table, user_id, ts)
    recent = _recent(info, ts)
    if memory.id not in recent:
        _store(table, user_id, info, {**recent, memory.id: ts.isoformat()})


def _store(table: Table, user_id: str, info: dict[str, Any], recent: dict[str, str]) -> None:
    info[KEY] = [[at, memory_id] for memory_id, at in recent.items()]
    table[user_id] = info


def down_ranked(memory: Memory) -> Memory:
    """`memory` stored past the budget: lowest importance, tagged."""
    return memory.model_copy(update={"importance": 1, "tags": sorted({*memory.tags, OVER_TAG})})
