"""Bodies of the registry API (what it knows about a user), shared by the routes and OpenAPI."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from streams.memory.model import Memory


class EditBody(BaseModel):
    """PATCH a memory: its new summary (1-2 self-contained sentences)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=280)


class TopicBody(BaseModel):
    """POST a blocked topic: facts about it are no longer stored."""

    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1, max_length=200)


class MemoryView(BaseModel):
    """A memory as the registry shows it: the document without its embedding.

    Provenance: `source_turn_ids` (`thread_id:turn_id`), `source`, `agent_id`, `run_id`,
    `actor_id`, `thread_id`; timestamps: `created_at`, `updated_at`, `valid_from`, `valid_to`.
    """

    model_config = ConfigDict(extra="allow")

    id: str
    user_id: str
    type: str
    category: str
    summary: str
    state: str
    pinned: bool
    importance: int
    source_turn_ids: list[str]
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, memory: Memory) -> dict[str, Any]:
        return memory.model_dump(mode="json", exclude={"embedding_b64", "context_b64"})


class MemoryList(BaseModel):
    user_id: str
    total: int = Field(description="Matching memories before limit/offset.")
    items: list[MemoryView]


class AuditEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    memory_id: str
    verb: str = Field(description="ADD, UPDATE, MERGE, SUPERSEDE, LINK, SOFT_DELETE, RESTORE, PURGE, ...")
    actor: str
    ts: datetime
    old: dict[str, Any] | None
    new: dict[str, Any] | None


class History(BaseModel):
    memory_id: str
    history: list[AuditEntry]


class ExportedMemory(MemoryView):
    history: list[AuditEntry]


class Export(BaseModel):
    user_id: str
    blocked_topics: list[str]
    proposals: list[ProposalView] = Field(default_factory=list, description="Pending profile changes.")
    memories: list[ExportedMemory]


class BlockedTopics(BaseModel):
    user_id: str
    topics: list[str]


class CommandOutcome(BaseModel):
    """One command sent to `memory.commands`, and what became of it so far."""

    command_id: str
    kind: str
    status: Literal["accepted", "applied", "rejected"] = Field(
        description="accepted: sent, not known to be applied yet; applied: done (events are its "
        "memory.events); rejected: dead-lettered (reason)."
    )
    events: list[dict[str, Any]] = Field(default_factory=list)
    reason: str | None = None
    status_url: str


class WriteResult(BaseModel):
    """A registry write: 202 with the commands sent; with ?wait=1, 200 once all are applied."""

    status: Literal["accepted", "applied", "rejected"]
    commands: list[CommandOutcome]


class Error(BaseModel):
    """Every error answer: a message safe to show, and a stable code for programs (the status's
    — invalid_request, unauthorized, forbidden, not_found, conflict, body_too_large, rejected,
    rate_limited, unavailable, internal_error, … — or a more precise one:
    idempotency_key_reused, categories_unavailable)."""

    error: str = Field(description="What is wrong, safe to show: no input echoed, no server path.")
    code: str = Field(description="Stable, for programs: `streams.api.views.CODES`, or a more "
                      "precise code where one is named (idempotency_key_reused, "
                      "categories_unavailable).")


class ProposalView(BaseModel):
    """A profile change waiting for the user's consent (seed 001 §10): the field, the current
    and the proposed value, where it was said, and when it expires (event time)."""

    id: str
    field: str = Field(description="preferred_name, pronouns, city, language (sensitive) or a benign field.")
    kind: Literal["sensitive", "benign"]
    entity_key: str
    category: str
    current_id: str
    current_summary: str
    proposed_summary: str
    thread_id: str
    source_turn_ids: list[str]
    proposed_at: datetime
    expires_at: datetime


class ProposalList(BaseModel):
    """GET proposals: the user's pending profile changes, oldest first."""

    user_id: str
    items: list[ProposalView]


Export.model_rebuild()
