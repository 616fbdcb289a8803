"""The `users` table: per user, the memory count, the user's clock and blocked topics, and the
proactivity feedback (read by `streams.proactivity.policy`).

Keyed by user_id, so the web routes use it to find the worker that owns a user.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from streams.memory.tables import Table

PROACTIVITY_KEY = "proactivity"
"""The user's proactivity rate state in their record: what `streams.proactivity.policy` reads."""


def user_info(users: Table, user_id: str, clock: datetime) -> dict[str, Any]:
    """A copy of the user's record (a fresh one, at `clock`, when the user has none yet)."""
    return dict(users.get(user_id) or {"memories": 0, "clock": clock.isoformat()})


def note_turn(users: Table, user_id: str, clock: datetime, created: bool) -> None:
    """Move the user's clock to `clock` (never back) and count a created memory."""
    info = user_info(users, user_id, clock)
    info["memories"] += 1 if created else 0
    info["clock"] = max(datetime.fromisoformat(info["clock"]), clock).isoformat()
    users[user_id] = info


def user_clock(users: Table, user_id: str) -> datetime | None:
    """The user's clock: the latest event time of their turns."""
    clock = (users.get(user_id) or {}).get("clock")
    return datetime.fromisoformat(clock) if clock else None


def blocked_topics(users: Table, user_id: str) -> list[str]:
    """The topics the user asked memstream never to store facts about."""
    return list((users.get(user_id) or {}).get("blocked_topics", []))


def record_proactivity_feedback(users: Table, user_id: str, acted: bool) -> dict[str, Any]:
    """Note that the consumer acted on (or ignored) a proactivity candidate of the user (the
    `proactivity_feedback` command); return the new rate state."""
    info = dict(users.get(user_id) or {})
    rate = dict(info.get(PROACTIVITY_KEY) or {})
    rate["ignored_streak"] = 0 if acted else int(rate.get("ignored_streak", 0)) + 1
    info[PROACTIVITY_KEY] = rate
    users[user_id] = info
    return rate
