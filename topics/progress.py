"""`memory.progress` (internal): what became of each turn, so callers know when it is done."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Outcome = Literal[
    "skipped", "created", "updated", "superseded", "duplicate", "blocked", "dlq", "disabled", "command", "applied",
]


class TurnProgress(BaseModel):
    """Outcome of fact `fact_index` of `fact_count` of one turn (fact_count 0: nothing to store)."""

    user_id: str
    thread_id: str
    turn_id: str
    stage: str
    outcome: Outcome
    fact_index: int = 0
    fact_count: int = 0
    memory_id: str | None = None
