"""`memory.candidates` (internal): what ingest decided for each turn, on its way to dedup.

Two kinds of item, in the order of the turns they come from (one partition per user):
`Candidate`, a fact to store; `ChatCommand`, a command said in a chat turn (forget …, "don't
remember this"). A chat command travels on this topic, not on `memory.commands`, so that it
applies after every fact of the turns before it and before any fact of a later turn, however
far behind the dedup stage is.

A record holds the items of one user's turns in one ingest batch, in order, as a JSON array
(at most `MAX_ITEMS_PER_RECORD`; sealed, `streams.privacy.payloads.seal_record`): one record per
user per batch rather than one per fact. A record written before holds one item;
`candidate_items` reads both.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag, TypeAdapter

from topics.commands import Command
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
    valence: Literal["positive", "negative", "neutral"] | None = Field(
        None, description="Sentiment of the sentence it was written from (seed 000 §3).")
    intensity: float | None = Field(None, ge=0.0, le=1.0,
                                    description="Strength of that sentiment, 0 neutral to 1.")
    event_start: date | None = Field(
        None, description="First day of the dates the fact mentions (\"painted it in 2022\"), "
                          "apart from when it was said.")
    event_end: date | None = Field(None, description="Last day of the dates the fact mentions.")


MAX_FACTS = 5
"""The most facts one extraction keeps of a turn (`MAX_FACTS_PER_TURN`'s bound)."""
MODEL_FACT_INDEX = 2 * MAX_FACTS + 1
"""The first `fact_index` of the facts the model adds to a turn later (`LLM_EXTRACTION=deferred`,
`streams.pipeline.enrich`): after the rules' and an inline model's (up to twice `MAX_FACTS`)
and the episode, so that their memory ids never meet."""
FACT_INDEXES = range(MODEL_FACT_INDEX + MAX_FACTS)
"""Every `fact_index` a turn's candidates can have."""


class Candidate(BaseModel):
    """Fact `fact_index` of `fact_count` from `turn`; memory ids derive from these."""

    kind: Literal["fact"] = "fact"
    turn: Turn
    fact: Fact
    fact_index: int = Field(ge=0)
    fact_count: int = Field(ge=1)
    confidence: float = Field(ge=0.0, le=1.0)
    source_refs: list[str] = Field(
        default_factory=list,
        description="Provenance when it is more than `turn`: an episode covers its window.",
    )
    context_turn: str | None = Field(
        None, description="The turn the fact's context vector is made of (`streams.write."
                          "contextual`), as its thread's buffer holds it (\"Speaker: text\", "
                          "secrets redacted); None for an episode.")
    context_previous: str | None = Field(
        None, description="The turn before it, when another speaker said it (the turn it answers).")
    vector_b64: str | None = Field(
        None, description="The summary's embedding. Written by ingest before the candidate "
                          "carried its texts; dedup now makes it from `fact.summary` (its "
                          "worker's `TextVectors` mostly holds it), and reads it when a "
                          "record has it.")
    context_b64: str | None = Field(
        None, description="The fact's context vector, as `vector_b64` (the memory stores it as "
                          "`context_b64`).")

    @property
    def refs(self) -> list[str]:
        return self.source_refs or [self.turn.ref]


class ChatCommand(BaseModel):
    """A command said in a chat turn, applied by the dedup stage in turn order."""

    kind: Literal["command"] = "command"
    command: Command


def _kind(value: Any) -> str:
    """Records written before `kind` existed are facts."""
    if isinstance(value, dict):
        return str(value.get("kind", "fact"))
    return str(getattr(value, "kind", "fact"))


CandidateRecord = Annotated[
    Annotated[Candidate, Tag("fact")] | Annotated[ChatCommand, Tag("command")],
    Discriminator(_kind),
]
CandidateItem = Candidate | ChatCommand
"""One item of a `memory.candidates` record."""
CANDIDATE_ITEMS: TypeAdapter[list[Candidate | ChatCommand]] = TypeAdapter(list[CandidateRecord])
MAX_ITEMS_PER_RECORD = 32
"""Items of one record at most; a user's batch with more goes in several records."""
MAX_RECORD_JSON_BYTES = 256 * 1024
"""A record's items' JSON at most, unless one item alone is longer: the items of a record
carry their turns' texts (a fact of a long turn carries it three times, in `turn` and its
context), so 32 of them could reach the producer's 1 MB request limit; a few KB each is usual."""


def record_arrays(items: Sequence[bytes]) -> Iterator[bytes]:
    """The JSON arrays that carry `items` (each an item's JSON) in order: each of at most
    `MAX_ITEMS_PER_RECORD` items and `MAX_RECORD_JSON_BYTES` (one item longer goes alone)."""
    start = 0
    while start < len(items):
        end, size = start + 1, len(items[start])
        while (end < len(items) and end - start < MAX_ITEMS_PER_RECORD
               and size + len(items[end]) <= MAX_RECORD_JSON_BYTES):
            size += len(items[end])
            end += 1
        yield b"[" + b",".join(items[start:end]) + b"]"
        start = end


def candidate_items(value: Any) -> list[Candidate | ChatCommand]:
    """The items of a `memory.candidates` record's JSON value: an array of them (written now)
    or one (written before). Raises ValueError (pydantic's ValidationError is one) for anything
    else: an empty array, or one of more than `MAX_ITEMS_PER_RECORD` items, included."""
    values = value if isinstance(value, list) else [value]
    if not 0 < len(values) <= MAX_ITEMS_PER_RECORD:
        raise ValueError(f"a candidates record holds 1 to {MAX_ITEMS_PER_RECORD} items")
    return CANDIDATE_ITEMS.validate_python(values)
