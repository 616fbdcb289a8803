"""`memory.progress` (internal): what became of each turn, so callers know when it is done."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Outcome = Literal[
    "skipped", "created", "updated", "superseded", "duplicate", "blocked", "dlq", "disabled", "command",
    "applied", "candidates", "purged", "proposed",
]


class TurnProgress(BaseModel):
    """Outcome of fact `fact_index` of `fact_count` of one turn (fact_count 0: nothing to store).

    The ingest stage reports every turn once: `candidates` (with how many), `skipped`,
    `command`, `disabled`; each fact then gets its dedup outcome (`created`, `updated`, …, `proposed`: held for the
    user's consent, `streams.memory.consent`), and
    a command said in chat its `applied`. A turn is done when every fact has one.
    `queued_ms`/`work_ms`: how long the record waited for the stage, and how long the stage
    worked on it, for the benchmark's per-stage breakdown.
    """

    user_id: str
    thread_id: str
    turn_id: str
    stage: str
    outcome: Outcome
    fact_index: int = 0
    fact_count: int = 0
    memory_id: str | None = None
    queued_ms: float | None = None
    work_ms: float | None = None
