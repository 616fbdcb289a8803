"""The write budget (issue 12 item 8): `MEMORY_WRITE_RATE_LIMIT_PER_HOUR` new memories per user
per event-time hour.

Counted in the user's `users` record (`write_budget`: the event times of the new memories of
the last hour, at most `limit` of them), so a replay counts the same. Past the budget a new fact
is not dropped: it is stored down-ranked (importance 1, tag `over_write_budget`), so it ranks
below the user's other memories and the lifecycle forgets it first. Only plain creations count
and are limited (seed 002: hot-path writes, so not episodes, which are captured after the turn):
an update, a merge and a correction (a supersede) change what is known and are never limited,
nor is a fact the user asked to keep (pinned).
"""
from __future__ import annotations

from datetime import datetime, timedelta

from streams.memory import users
from streams.memory.model import Memory
from streams.memory.tables import Table

WINDOW = timedelta(hours=1)
KEY = "write_budget"
OVER_TAG = "over_write_budget"


def spend(table: Table, user_id: str, ts: datetime, limit: int) -> bool:
    """Count one new memory of the user at event time `ts`; False when the hour's budget is
    spent (then nothing is counted). `limit` 0: no budget."""
    if limit <= 0:
        return True
    info = users.user_info(table, user_id, ts)
    recent = [t for t in info.get(KEY, []) if ts - WINDOW < datetime.fromisoformat(t) <= ts]
    if len(recent) >= limit:
        return False
    info[KEY] = [*recent, ts.isoformat()]
    table[user_id] = info
    return True


def down_ranked(memory: Memory) -> Memory:
    """`memory` stored past the budget: lowest importance, tagged."""
    return memory.model_copy(update={"importance": 1, "tags": sorted({*memory.tags, OVER_TAG})})
