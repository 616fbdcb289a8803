"""`memory.proactivity`: memories worth bringing up unprompted (SPEC §2, seed 000 §11).

One record per memory version that passed the thresholds and the user's rate limit, keyed by
user_id. The record names memories and turns by id and carries no user content (no summary):
a consumer that wants the words reads them through the registry or the query API, under the
user's access rules. Ids are deterministic, so a consumer drops replays by `proactivity_id`,
and answers with a `proactivity_feedback` command on `memory.commands` (acted | ignored).
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from topics.times import EventTime

Tone = Literal["friendly", "soft_check_in", "neutral"]


class ProactivityScores(BaseModel):
    """The scores that passed the thresholds, and the thresholds they passed."""

    proactivity_weight: float = Field(ge=0.0, le=1.0)
    trust_score: float = Field(ge=0.0, le=1.0)
    importance: int = Field(ge=1, le=5)
    intensity: float = Field(ge=0.0, le=1.0, description="0.5 when the memory has none.")
    weight_min: float
    trust_min: float


class ProactivityCandidate(BaseModel):
    """A memory a downstream agent may bring up, with why (provenance, reason) and how (tone)."""

    proactivity_id: str
    user_id: str
    thread_id: str
    memory_ids: list[str] = Field(min_length=1)
    source_turn_ids: list[str] = Field(description="Provenance: `thread_id:turn_id` of each turn.")
    reason: str = Field(description="Why it was proposed, without the user's words.")
    tone: Tone
    valence: str | None = None
    category: str
    memory_type: str
    scores: ProactivityScores
    ts: EventTime = Field(description="Event time of the change that made it a candidate.")
