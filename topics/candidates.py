"""`memory.candidates` (internal): facts extracted from one turn, on their way to dedup."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from topics.turns import Turn

MemoryType = Literal["semantic", "episodic", "procedural", "insight", "consolidated"]


class Fact(BaseModel):
    """One fact extracted from a turn, written to the seed 001 §9 constraints."""

    type: MemoryType
    summary: str = Field(min_length=1, max_length=280)
    category: str = "Other"
    importance: int = Field(3, ge=1, le=5)
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    entity_key: str | None = None
    pinned: bool = Field(False, description="The user asked to pin it.")


class Candidate(BaseModel):
    """Fact `fact_index` of `fact_count` from `turn`; memory ids derive from these."""

    turn: Turn
    fact: Fact
    fact_index: int = Field(ge=0)
    fact_count: int = Field(ge=1)
    confidence: float = Field(ge=0.0, le=1.0)
    source_refs: list[str] = Field(
        default_factory=list,
        description="Provenance when it is more than `turn`: an episode covers its window.",
    )

    @property
    def refs(self) -> list[str]:
        return self.source_refs or [self.turn.ref]
