"""`memory.progress` (internal): what became of each turn, so callers know when it is done.

A record holds the progress of one user's turns in one batch of a stage, as a JSON array of
`TurnProgress` (in order): a stage sends one record per user per batch, not one per turn and
fact (two records a turn before), deflated when that is shorter (`topics.deflated`). A record
written before holds the array in clear, or one `TurnProgress` object; `progress_entries`
reads all three.
"""
from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, TypeAdapter

from topics.deflated import deflated, inflated

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


PROGRESS_RECORD: TypeAdapter[list[TurnProgress]] = TypeAdapter(list[TurnProgress])
"""The entries of one user's batch, as a JSON array (`progress_record`)."""


def progress_record(entries: list[TurnProgress]) -> bytes:
    """A `memory.progress` record as the stages write it: the entries of one user's batch,
    deflated when that is shorter."""
    return deflated(PROGRESS_RECORD.dump_json(entries))


def progress_entries(value: bytes | None) -> list[dict[str, Any]]:
    """The progress entries (as JSON objects) of a `memory.progress` record, old or new form
    (module doc); raises ValueError for anything else (`DeflatedRecordError` is one)."""
    parsed = orjson.loads(inflated(value or b""))  # orjson.JSONDecodeError is a ValueError
    entries = parsed if isinstance(parsed, list) else [parsed]
    if not all(isinstance(entry, dict) for entry in entries):
        raise ValueError("a progress record holds something other than progress entries")
    return entries


def parse_progress(value: bytes | None) -> list[TurnProgress]:
    """`progress_entries`, validated; raises ValueError (pydantic's too) when they are not."""
    return PROGRESS_RECORD.validate_python(progress_entries(value))
