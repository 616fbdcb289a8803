"""Which new or changed memories become proactivity candidates (seed 000 §11), and how often.

A memory qualifies when it has a reason to reach out — a negative event worth a check-in, an
upcoming dated event, a goal, a strongly positive event — and its `proactivity_weight` and
`trust_score` pass their thresholds. The weight follows seed 000 §3's ingredients: normalised
importance, emotional intensity (a negative one counts 0.8, as in `valence_intensity_norm`) and
the reason. The tone comes from the valence: negative → a soft check-in, positive → friendly.

Rate limit, per user and in event time (the turn's time, never the worker's clock): at most
`max_per_day` candidates per event-time day, and at least `min_interval` between two; each
candidate the consumer reports ignored (`proactivity_feedback` command) doubles that interval
(capped at `max_interval`); one reported acted on resets it. The state lives in the user's
`users` record under `proactivity`.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from streams.memory import ids
from streams.settings import ProactivitySettings
from streams.memory.decay import importance_norm
from streams.memory.model import Memory
from streams.write.sentiment import Sentiment, intensity_norm
from streams.memory.tables import Table
from streams.memory.users import PROACTIVITY_KEY
from topics.proactivity import (
    ProactivityCandidate, ProactivityReason, ProactivityScores, ProactivityTone,
)

STATE_KEY = PROACTIVITY_KEY
REASON_WEIGHT: dict[str, float] = {"check_in": 1.0, "upcoming": 1.0, "goal": 0.8, "celebrate": 0.6}
GOAL_CATEGORIES = frozenset({"goals"})


@dataclass(frozen=True)
class ProactivityPolicy:
    """Thresholds and rate limit of proactivity candidates (settings `PROACTIVITY_*`)."""

    enabled: bool
    min_weight: float
    min_trust: float
    max_per_day: int
    min_interval: timedelta
    max_interval: timedelta = timedelta(days=30)
    """Longest gap the rate limit remembers (not a setting)."""

    @classmethod
    def of(cls, proactivity: ProactivitySettings) -> ProactivityPolicy:
        return cls(enabled=proactivity.proactivity_enabled,
                   min_weight=proactivity.proactivity_min_weight,
                   min_trust=proactivity.proactivity_min_trust,
                   max_per_day=proactivity.proactivity_max_per_day,
                   min_interval=timedelta(hours=proactivity.proactivity_min_interval_hours))

    def consider(self, users: Table, memory: Memory, ts: datetime) -> ProactivityCandidate | None:
        """The candidate `memory` (just created or changed at event time `ts`) makes, or None;
        a candidate is counted against the user's rate limit."""
        if not self.enabled or memory.state != "active" or memory.private:
            return None
        reason = reason_of(memory, ts)
        if reason is None:
            return None
        weight = proactivity_weight(memory, reason)
        if weight < self.min_weight or memory.trust_score < self.min_trust:
            return None
        info = dict(users.get(memory.user_id) or {})
        rate = dict(info.get(STATE_KEY) or {})
        if not self._allowed(rate, ts):
            return None
        day = ts.date().isoformat()
        rate["sent_today"] = (rate.get("sent_today", 0) if rate.get("day") == day else 0) + 1
        rate["day"], rate["last_sent"] = day, ts.isoformat()
        info[STATE_KEY] = rate
        users[memory.user_id] = info
        return ProactivityCandidate(
            candidate_id=ids.event_id(memory.id, "proactivity", memory.version),
            user_id=memory.user_id, memory_ids=[memory.id],
            source_turn_ids=list(memory.source_turn_ids), reason=reason, tone=tone_of(memory),
            scores=ProactivityScores(
                proactivity_weight=round(weight, 4), trust_score=memory.trust_score,
                importance=memory.importance, intensity=intensity_of(memory),
                valence=memory.valence, min_weight=self.min_weight, min_trust=self.min_trust),
            ts=ts,
        )

    def interval(self, rate: dict[str, Any]) -> timedelta:
        """The least time between two candidates: doubled per candidate ignored in a row."""
        return min(self.min_interval * (2 ** int(rate.get("ignored_streak", 0))), self.max_interval)

    def _allowed(self, rate: dict[str, Any], ts: datetime) -> bool:
        if rate.get("day") == ts.date().isoformat() and rate.get("sent_today", 0) >= self.max_per_day:
            return False
        last = rate.get("last_sent")
        return last is None or ts - datetime.fromisoformat(last) >= self.interval(rate)


def intensity_of(memory: Memory) -> float:
    return float(memory.intensity) if memory.intensity is not None else 0.0


def valence_of(memory: Memory) -> str:
    return (memory.valence or "neutral").strip().lower()


def reason_of(memory: Memory, ts: datetime) -> ProactivityReason | None:
    """Why reaching out about `memory` could help, or None."""
    valence, intensity = valence_of(memory), intensity_of(memory)
    if valence == "negative" and intensity >= 0.4:
        return "check_in"
    if memory.valid_from is not None and memory.valid_from > ts:
        return "upcoming"
    if memory.category.casefold() in GOAL_CATEGORIES:
        return "goal"
    if valence == "positive" and intensity >= 0.6:
        return "celebrate"
    return None


def proactivity_weight(memory: Memory, reason: ProactivityReason) -> float:
    """0..1: 0.5 normalised importance + 0.3 emotional intensity (a negative one × 0.8, seed
    000 §3) + 0.2 the reason's own weight."""
    intensity = intensity_norm(Sentiment(valence_of(memory), intensity_of(memory)))
    return (0.5 * importance_norm(memory.importance) + 0.3 * min(max(intensity, 0.0), 1.0)
            + 0.2 * REASON_WEIGHT[reason])


def tone_of(memory: Memory) -> ProactivityTone:
    valence = valence_of(memory)
    if valence == "negative":
        return "soft_check_in"
    return "friendly" if valence == "positive" else "neutral"
