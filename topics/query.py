"""`memory.query` (docs/architecture.md#read-path, seed 001 §6): the request an agent sends and the answer it gets.

Strict: an unknown field, a wrong type or an impossible range is a validation error (HTTP 400),
never silently ignored — a filter the server cannot apply must not widen the search.
"""
from __future__ import annotations

from datetime import date, datetime, time, timezone
from typing import Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from topics.schema_errors import Path, explain
from topics.times import EventTime
from topics.turns import Role

Name = Field(min_length=1, max_length=200)
ReturnMode = Literal["bullets", "full"]
TOP_K_MAX = 10_000
"""The largest `top_k` a request can carry at all; the worker's own limit (QUERY_MAX_TOP_K,
100 by default) is checked after."""
BUDGET_TOKENS_MAX = 1_000_000
"""The largest `budget_tokens` a request can carry at all; QUERY_MAX_BUDGET_TOKENS is checked
after."""
REVISION_MAX = 2**53 - 1
"""The largest revision a request can name: the largest integer JSON readers (JavaScript's
numbers) hold exactly, far past any thread's revision. Every number of a request is bounded, so
none reaches a JSON encoder it overflows (a 64-bit one) after the query ran."""


def _as_instant(value: date | datetime | None) -> datetime | None:
    """A bare date is midnight UTC of that day; a datetime must carry its zone."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.combine(value, time.min, tzinfo=timezone.utc)


class QueryFilters(BaseModel):
    """Server-side filters (seed 001 §6.1). Each one narrows; none can widen the search."""

    model_config = ConfigDict(extra="forbid", strict=True)

    user_id: str | None = Field(None, min_length=1, max_length=200,
                                description="Must be the route's user when given.")
    agent_id: str | None = Field(None, min_length=1, max_length=200)
    run_id: str | None = Field(None, min_length=1, max_length=200)
    actor_id: str | None = Field(None, min_length=1, max_length=200)
    role: Role | None = None
    category: str | None = Field(None, min_length=1, max_length=200)
    pinned: bool | None = None
    importance_min: int | None = Field(None, ge=1, le=5)
    importance_max: int | None = Field(None, ge=1, le=5)
    updated_after: AwareDatetime | date | None = None
    updated_before: AwareDatetime | date | None = None

    @field_validator("role", mode="before")
    @classmethod
    def _role_from_text(cls, value: Any) -> Any:
        # strict mode refuses a str for an Enum; the wire carries the role's name.
        if isinstance(value, str):
            try:
                return Role(value)
            except ValueError:
                raise ValueError(f"role must be one of {[r.value for r in Role]}") from None
        return value

    @model_validator(mode="after")
    def _ranges_make_sense(self) -> "QueryFilters":
        if (self.importance_min is not None and self.importance_max is not None
                and self.importance_min > self.importance_max):
            raise ValueError("importance_min is greater than importance_max")
        after, before = self.after, self.before
        if after is not None and before is not None and after > before:
            raise ValueError("updated_after is later than updated_before")
        return self

    @property
    def after(self) -> datetime | None:
        return _as_instant(self.updated_after)

    @property
    def before(self) -> datetime | None:
        return _as_instant(self.updated_before)


class QueryRequest(BaseModel):
    """One `memory.query` call. `agent` selects the category allowlist the server enforces."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    agent: str = Name
    query: str = Field(min_length=1, max_length=8000)
    categories: list[str] | None = Field(
        None, min_length=1, max_length=50,
        description="Only these categories (each must be in the agent's allowlist); omitted: the "
        "whole allowlist.")
    filters: QueryFilters = Field(default_factory=QueryFilters)
    top_k: int | None = Field(None, ge=1, le=TOP_K_MAX,
                              description="Default: MEMORY_K; at most QUERY_MAX_TOP_K.")
    threshold: float | None = Field(
        None, ge=0.0, le=1.0, description="Drop items whose score is lower. An item's score is "
        "the probability that it answers the query, calibrated on LoCoMo from its relevance and "
        "its ranking score; the answer lists its items by it, so a threshold drops only the "
        "tail. Categories with context `all` are exempt. Default: QUERY_THRESHOLD for bullets, "
        "none for full answers.")
    explain: bool = Field(
        False, description="Give each item the figures behind its score (`explain`: similarity, "
        "relevance, rank_score); without it an item carries its score alone.")
    return_: ReturnMode = Field("bullets", alias="return")
    budget_tokens: int | None = Field(None, ge=1, le=BUDGET_TOKENS_MAX,
                                      description="Token budget of the whole answer; at most "
                                      "QUERY_MAX_BUDGET_TOKENS.")
    since_rev: int | None = Field(None, ge=0, le=REVISION_MAX,
                                  description="Delta header since this thread revision.")
    thread_id: str | None = Field(None, min_length=1, max_length=200,
                                  description="The thread whose revisions since_rev counts.")
    record_access: bool = Field(
        True, description="Refresh last_accessed/access_count of the returned memories (through "
        "the stream). False for evaluation and inspection reads, so one read does not rank the "
        "next (recency counts from the last access).")
    reference_time: EventTime | None = Field(
        None, description="The 'now' of time phrases and recency; default: the user's clock "
        "(the latest event time of their turns), never the worker's wall clock.")
    include_archived: bool | None = Field(
        None, description="Search the archive (the cold tier) too: true always, false never; "
        "omitted: when the query points to the past (recall intent, a time phrase) or the active "
        "memories answer it weakly. Archived items rank below active ones and say so "
        "(`archived: true`).")

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is blank")
        return value.strip()

    @field_validator("categories")
    @classmethod
    def _names(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not c.strip() or len(c) > 200 for c in value):
            raise ValueError("categories must be non-empty names")
        return value

    @model_validator(mode="after")
    def _since_rev_needs_thread(self) -> "QueryRequest":
        if self.since_rev is not None and self.thread_id is None:
            raise ValueError("since_rev needs thread_id")
        return self


def field_names(model: type[BaseModel]) -> list[str]:
    """The fields a request may carry, as spelled on the wire."""
    return sorted(info.alias or name for name, info in model.model_fields.items())


def _unknown_field(parent: Path) -> str:
    """An unknown field is not named (its name is input); the allowed ones are."""
    model = {(): QueryRequest, ("filters",): QueryFilters}.get(parent)
    return f"unknown field (allowed: {', '.join(field_names(model))})" if model else "unknown field"


def validation_message(exc: ValidationError) -> str:
    """One readable line per problem: `field.path: message` (no input values or keys echoed)."""
    return explain(exc, unknown=_unknown_field)


class Explain(BaseModel):
    """The figures behind an item's score (a request with `explain`): for understanding an
    answer, not for thresholds — none of them is comparable across queries as `score` is."""

    similarity: float = Field(description="The cosine of the query and the memory.")
    relevance: float = Field(description="What the candidates were drawn by: the cosine fused "
                             "with BM25 (hybrid retrieval) and the time-window boost.")
    rank_score: float = Field(description="The ranking formula's score "
                              "(docs/architecture.md#read-path), which chose the answer's items; "
                              "scaled over one query's candidates.")


class BulletItem(BaseModel):
    """`return: bullets` — what an agent injects into its context."""

    id: str
    category: str
    type: str
    text: str
    tokens: int
    archived: bool = Field(False, description="From the archive (the cold tier).")
    score: float = Field(description="The probability that the item answers the query "
                                     "(calibrated; what `threshold` compares with, and what the "
                                     "answer's items are listed by).")
    explain: Explain | None = Field(None, description="With `explain` only.")


class FullItem(BulletItem):
    """`return: full` — the memory document (no vector) with its score and related bullets."""

    model_config = ConfigDict(extra="allow")

    summary: str
    source_turn_ids: list[str]
    related: list[dict[str, Any]] = Field(default_factory=list)


class DeltaHeader(BaseModel):
    rev: int
    since_rev: int
    header: str = Field(description="'Memory updates since rev X:' and at most 3 bullets; '' when none.")
    tokens: int


class TimeWindow(BaseModel):
    """Dates (the user's calendar, inclusive) an episodic item must fall in."""

    phrase: str
    start: date
    end: date


class QueryResponse(BaseModel):
    """The answer: delta header first (when asked), then semantic items, then episodic ones."""

    user_id: str
    agent: str
    return_: ReturnMode = Field(alias="return")
    delta: DeltaHeader | None = None
    items: list[dict[str, Any]]
    context: str = Field(description="Delta header and item bullets as one text, what the budget counts.")
    tokens: int
    budget_tokens: int | None = None
    dropped_for_budget: int = 0
    recall_intent: bool = False
    cold_tier: Literal["asked", "recall_intent", "weak_active", "combining"] | None = Field(
        None, description="Why the archive was searched too (asked, recall_intent, weak_active, "
        "combining: a question whose answer takes several memories, streams/read/evidence.py); "
        "null when it was not.")
    time_window: TimeWindow | None = None
    reference_time: datetime | None = None
