"""The write budget (issue 12 item 8): `MEMORY_WRITE_RATE_LIMIT_PER_HOUR` new memories per user
per event-time hour.

Counted from the memories themselves: the user's semantic memories created (`created_at`, the
event time of the turn) in the hour before the new one, pinned ones and those stored past the
budget left out (`spends`). Nothing is kept beside the memories, so the count is exactly-once
whenever the memories are: a worker killed and replayed counts the same memories, in the same
order, as one that ran through (a counter kept in the `users` record could land in its
changelog apart from the memory it counted, and did). The index keeps the two numbers per row
(`Columns.created`, `Columns.budgeted`), so counting is a numpy mask, not a loop.

Past the budget a new fact is not dropped: it is stored down-ranked (one importance level
lower, tag `over_write_budget`), so it ranks below what it would have and the lifecycle moves
it to the archive sooner. One level, not the lowest: importance 1 is what the TTL purges as
small talk (`streams.lifecycle.forgetting`), and a long, dense session of real facts is not
small talk (on LoCoMo, where sessions run past 20 facts an hour, dropping to 1 put a third of
the importance-1 memories, many of them asked about later, on the way to a purge). Only plain creations are limited (seed 002: hot-path writes, so not episodes, which are
captured after the turn): an update, a merge and a correction (a supersede) change what is
known and are never limited, nor is a fact the user asked to keep (pinned). A correction or a
promotion still counts as a new semantic memory of its hour.

This module holds the rules on one memory, below the index (which records `spends` per row);
the count against the budget is made where a candidate is applied
(`streams.memory.candidates`), over the index.
"""
from __future__ import annotations

from datetime import timedelta

from streams.memory.model import Memory

WINDOW = timedelta(hours=1)
OVER_TAG = "over_write_budget"


def spends(memory: Memory) -> bool:
    """Whether `memory` counts against its hour's budget: semantic, not pinned, not stored past
    the budget."""
    return memory.type == "semantic" and not memory.pinned and OVER_TAG not in memory.tags


def down_ranked(memory: Memory) -> Memory:
    """`memory` stored past the budget: one importance level lower (at least 1), tagged."""
    return memory.model_copy(update={"importance": max(memory.importance - 1, 1),
                                     "tags": sorted({*memory.tags, OVER_TAG})})
