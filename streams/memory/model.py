"""The memory document (docs/architecture.md#memory-document)."""
from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, Field

from topics.candidates import MemoryType

MemoryState = Literal["active", "superseded", "soft_deleted", "archived", "purged"]


class PendingChange(BaseModel):
    """A change of a memory's value that waits for the user's consent (seed 001 §10,
    `streams.memory.consent`): the memory is still current, but not settled."""

    proposal_id: str
    field: str = Field(description="The profile field: preferred_name, pronouns, city, …")
    proposed_summary: str
    expires_at: datetime


class Memory(BaseModel):
    """One memory of one user. `source_turn_ids` is its provenance (`thread_id:turn_id`)."""

    id: str
    user_id: str
    type: MemoryType
    category: str = "Other"
    summary: str
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    entity_key: str | None = None
    source: Literal["chat", "external"] = "chat"
    trust_score: float = 0.7
    importance: int = Field(3, ge=1, le=5)
    valence: str | None = None
    intensity: float | None = None
    pinned: bool = False
    private: bool = False
    state: MemoryState = "active"
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime
    last_verified_at: datetime | None = None
    access_count: int = 0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    event_start: date | None = Field(
        None, description="First day of the dates the summary mentions (\"in 2022\"), which a "
                          "time filter sees besides `date_iso` (when it was said).")
    event_end: date | None = Field(None, description="Last day of the dates the summary mentions.")
    superseded_by: str | None = None
    purge_at: datetime | None = Field(
        None, description="When a soft-deleted memory is purged (restorable until then).")
    related_ids: list[str] = Field(default_factory=list)
    relations: dict[str, float] = Field(
        default_factory=dict, description="related_to edges: memory id -> strength (cosine)."
    )
    consolidated_from: list[str] = Field(default_factory=list)
    source_turn_ids: list[str] = Field(default_factory=list)
    agent_id: str | None = None
    run_id: str | None = None
    actor_id: str | None = None
    role: str | None = None
    thread_id: str | None = None
    date_iso: str | None = None
    week: int | None = None
    year: int | None = None
    version: int = Field(1, description="Incremented on every change; event ids derive from it.")
    embedding_b64: str | None = Field(None, description="The embedding of `summary`: float16, base64, after \"h:\" (plain base64 of float32 as written before; `streams.memory.vector_index.encode_vector`).")
    context_b64: str | None = Field(
        None, description="The conversation the fact was said in, as a vector (the weighted "
                          "embeddings of its turn and the one before, `streams.write.contextual`; "
                          "int8 with its scale, base64, after \"i8:\" (float16 as `embedding_b64` "
                          "as written before; `streams.memory.vector_index.encode_context_vector`)): "
                          "a query searches by normalise(embedding + "
                          "context), dedup, forget and links by the embedding alone. None for "
                          "episodes and memories written before it existed.")
    pending_change: PendingChange | None = Field(
        None, description="A proposed change of this value waiting for the user's consent; a "
                          "reader shows it beside the value, which is not settled meanwhile.")

    @property
    def is_visible(self) -> bool:
        """Active: what a query returns by default (the hot tier)."""
        return self.state == "active"

    @property
    def is_archived(self) -> bool:
        """In the cold tier (docs/decisions.md: archive is cold storage): kept with its vector, served
        only when a query reaches for the archive (`streams.read.cold_tier`), below active
        memories."""
        return self.state == "archived"
