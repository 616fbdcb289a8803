"""Lifecycle pass: expire consent proposals on the event-time watermark (seed 001 §10).

A user's own next change expires their due proposals too (`streams.memory.consent`); this pass
does it for a user who has gone quiet, so "7 days of event time" holds for idle users as well.
"""
from __future__ import annotations

from datetime import datetime

from streams.lifecycle.passes import LIFECYCLE_THREAD
from streams.memory.consent import expire_due
from streams.memory.state import MemoryState
from topics.events import MemoryEvent


class ConsentExpiryPass:
    """Expire the user's proposals whose `expires_at` is at or before the watermark."""

    name = "consent"

    async def __call__(self, state: MemoryState, user_id: str, now: datetime) -> list[MemoryEvent]:
        if not state.config.consent.enabled:
            return []
        return expire_due(state, user_id, now, LIFECYCLE_THREAD)
