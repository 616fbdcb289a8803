"""`memory.proactivity`: memories worth a proactive message, for downstream consumers (docs/architecture.md#topics,
seed 000 §11).

A record carries ids, the reason, the suggested tone and the scores that passed — never the
user's words: a consumer reads the memories it names through the registry API
(`GET /v1/users/{user_id}/memories/{memory_id}`), under its own API key and the user's scope.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from topics.times import EventTime

ProactivityReason = Literal["check_in", "upcoming", "goal", "celebrate"]
ProactivityTone = Literal["soft_check_in", "friendly", "neutral"]


class ProactivityScores(BaseModel):
    """The scores of the memory that passed the thresholds, and the thresholds."""

    proactivity_weight: float
    trust_score: float
    importance: int
    intensity: float
    valence: str | None = None
    min_weight: float
    min_trust: float


class ProactivityCandidate(BaseModel):
    """One proactivity candidate. `candidate_id` is deterministic (memory and its version), so
    a consumer can drop a replay."""

    candidate_id: str
    user_id: str
    memory_ids: list[str] = Field(min_length=1)
    source_turn_ids: list[str] = Field(default_factory=list,
                                       description="Provenance: thread_id:turn_id of each.")
    reason: ProactivityReason
    tone: ProactivityTone
    scores: ProactivityScores
    ts: EventTime
