"""Which memory changes become `memory.proactivity` records, and how often per user.

A created or updated memory (semantic, episodic or consolidated; active, not private) whose
`proactivity_weight` and `trust_score` reach the thresholds becomes a candidate — if the user's
rate limit allows: at most one per `min_interval` of event time, an interval multiplied by
`backoff_factor` for each candidate in a row the consumer reported ignored (capped at
`backoff_max_steps`), and reset when one is acted on. Event time only, so a replay decides as
the live run did.

State, per user in the `users` table under "proactivity": the time of the last record, the
ignored streak, the decisions of the latest memory versions (a replayed candidate re-sends
the record it made, never a new one), and the feedback already counted.

Delivery is at-least-once: the decision is written before the record is sent, and a replay of
the candidate re-sends it (same `proactivity_id`).
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from streams.memory.model import Memory
from streams.memory.tables import Table, composite_key
from streams.memory.users import user_info
from streams.proactivity.scoring import intensity_of, proactivity_weight, tone_of, valence_of
from topics.commands import Command
from topics.events import MemoryEvent
from topics.proactivity import ProactivityCandidate, ProactivityScores

KINDS = frozenset({"created", "updated"})
TYPES = frozenset({"semantic", "episodic", "consolidated"})


@dataclass(frozen=True)
class ProactivityConfig:
    """Thresholds (seed 000 §11) and the per-user rate limit."""

    enabled: bool = True
    weight_min: float = 0.4
    trust_min: float = 0.6
    min_interval: timedelta = timedelta(hours=6)
    backoff_factor: float = 2.0
    backoff_max_steps: int = 5
    kept: int = 64
    """Decisions and feedback ids remembered per user (for replays and repeated feedback)."""

    def interval(self, ignored_streak: int) -> timedelta:
        """The least event time between two records of a user with this ignored streak."""
        return self.min_interval * self.backoff_factor ** min(ignored_streak, self.backoff_max_steps)


def proactivity_id(memory: Memory) -> str:
    """Deterministic id of the candidate made from one version of a memory."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, composite_key("proactivity", memory.id,
                                                            str(memory.version))))


def candidates_of(users: Table, events: Iterable[MemoryEvent],
                  memory_of: Callable[[str], Memory | None],
                  config: ProactivityConfig) -> list[ProactivityCandidate]:
    """The records to send for the events of one change (a replay gets the first time's)."""
    if not config.enabled:
        return []
    out = []
    for event in events:
        if event.kind not in KINDS:
            continue
        memory = memory_of(event.memory_id)
        if memory is None or memory.user_id != event.user_id:
            continue
        record = _decide(users, event, memory, config)
        if record is not None:
            out.append(record)
    return out


def _decide(users: Table, event: MemoryEvent, memory: Memory,
            config: ProactivityConfig) -> ProactivityCandidate | None:
    pid = proactivity_id(memory)
    info = user_info(users, memory.user_id, event.ts)
    rate = _rate(info)
    if pid in rate["decided"]:  # a replay: what was decided then
        made = rate["decided"][pid]
        return ProactivityCandidate.model_validate(made) if made else None
    record = _candidate(pid, event, memory, config)
    if record is not None and not _allowed(rate, event.ts, config):
        record = None
    if record is not None:
        rate["last_at"] = event.ts.isoformat()
    rate["decided"][pid] = record.model_dump(mode="json") if record else None
    rate["decided"] = dict(list(rate["decided"].items())[-config.kept:])
    info["proactivity"] = rate
    users[memory.user_id] = info
    return record


def _candidate(pid: str, event: MemoryEvent, memory: Memory,
               config: ProactivityConfig) -> ProactivityCandidate | None:
    """The record, if the memory passes the thresholds (rate limit aside)."""
    if memory.type not in TYPES or not memory.is_visible or memory.private:
        return None
    weight = proactivity_weight(memory)
    if weight < config.weight_min or memory.trust_score < config.trust_min:
        return None
    valence = valence_of(memory)
    return ProactivityCandidate(
        proactivity_id=pid, user_id=memory.user_id, thread_id=event.thread_id,
        memory_ids=[memory.id], source_turn_ids=list(memory.source_turn_ids),
        reason=(f"{event.kind} {memory.type} memory in {memory.category}: importance "
                f"{memory.importance}/5, {valence} valence, weight {weight:.3f} >= "
                f"{config.weight_min:.3f}, trust {memory.trust_score:.3f} >= {config.trust_min:.3f}"),
        tone=tone_of(memory), valence=memory.valence, category=memory.category,
        memory_type=memory.type,
        scores=ProactivityScores(
            proactivity_weight=weight, trust_score=memory.trust_score,
            importance=memory.importance, intensity=intensity_of(memory),
            weight_min=config.weight_min, trust_min=config.trust_min),
        ts=event.ts,
    )


def _allowed(rate: dict[str, Any], now: datetime, config: ProactivityConfig) -> bool:
    last = rate.get("last_at")
    if last is None:
        return True
    return now - datetime.fromisoformat(last) >= config.interval(int(rate["ignored_streak"]))


def _rate(info: dict[str, Any]) -> dict[str, Any]:
    rate = dict(info.get("proactivity") or {})
    rate.setdefault("last_at", None)
    rate.setdefault("ignored_streak", 0)
    rate["decided"] = dict(rate.get("decided") or {})
    rate["feedback"] = list(rate.get("feedback") or [])
    return rate


def record_feedback(users: Table, cmd: Command, config: ProactivityConfig) -> None:
    """A `proactivity_feedback` command: `ignored` lengthens the user's interval (backoff),
    `acted` resets it. Feedback on one record counts once."""
    info = user_info(users, cmd.user_id, cmd.ts)
    rate = _rate(info)
    if cmd.proactivity_id in rate["feedback"]:
        return
    rate["ignored_streak"] = rate["ignored_streak"] + 1 if cmd.feedback == "ignored" else 0
    rate["feedback"] = [*rate["feedback"], cmd.proactivity_id][-config.kept:]
    info["proactivity"] = rate
    users[cmd.user_id] = info


def rate_state(users: Table, user_id: str) -> dict[str, Any]:
    """The user's rate state (last record time and ignored streak), for the registry and tests."""
    rate = _rate(dict(users.get(user_id) or {}))
    return {"last_at": rate["last_at"], "ignored_streak": rate["ignored_streak"]}
