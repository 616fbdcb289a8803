"""The audit trail (docs/architecture.md#memory-document): an entry per change, with actor, time, old and new value.

Kept per memory in the `audit` table, oldest first. A purge replaces a memory's history with a
content-free tombstone.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from streams.memory import ids
from streams.memory.model import Memory
from streams.memory.tables import Table
from topics.events import EVENT_KINDS, MemoryEvent

# (event kind, reason) -> audit verb of docs/architecture.md#memory-document, where the reason
# names another verb than the kind's own (`topics.events.EVENT_KINDS`, `audit_verb`).
REASON_VERBS = {
    ("updated", "auto_update_band"): "MERGE", ("updated", "check_band_same_fact"): "MERGE",
    ("updated", "restated_same_fact"): "MERGE", ("soft_deleted", "ttl"): "TTL",
    # consent decisions (streams.memory.consent), audited under the proposal's marker id
    ("candidate", "consent_proposed"): "CONSENT_PROPOSED",
    **{("updated", f"consent_{d}"): f"CONSENT_{d.upper()}"
       for d in ("applied", "rejected", "expired", "replaced", "corroborated")},
}


def audit_value(memory: Memory) -> dict[str, Any]:
    """The fields of a memory an audit entry shows as its old or new value."""
    return {"summary": memory.summary, "state": memory.state, "pinned": memory.pinned,
            "importance": memory.importance, "category": memory.category}


def verb_of(event: MemoryEvent) -> str:
    """The audit verb of an event: its reason's, else its kind's."""
    return REASON_VERBS.get((event.kind, event.meta.get("reason", "")), EVENT_KINDS[event.kind].audit_verb)


class AuditLog:
    """The `audit` table."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Audit entries of one memory (or topic marker), oldest first."""
        return list(self.table.get(memory_id) or [])

    def record(self, event: MemoryEvent, memory: Memory, old: Memory | None, actor: str) -> None:
        """The entry of one announced change; a purge leaves only a content-free tombstone."""
        purge = event.kind == "purged"
        entry = {
            "id": event.event_id, "memory_id": memory.id, "user_id": memory.user_id,
            "verb": verb_of(event), "actor": actor, "ts": event.ts.isoformat(), "rev": event.rev,
            "thread_id": event.thread_id,
            "old": None if purge or old is None else audit_value(old),
            "new": None if purge else audit_value(memory),
            "meta": {} if purge else {k: v for k, v in event.meta.items() if k != "type"},
        }
        self.table[memory.id] = [*([] if purge else self.history(memory.id)), entry]

    def record_link(self, memory: Memory, ts: datetime, edges: dict[str, float]) -> None:
        """A LINK entry: `related_to` edges added to `memory` (no event, no revision)."""
        entry = {"id": ids.event_id(memory.id, "linked", len(memory.relations)),
                 "memory_id": memory.id, "user_id": memory.user_id, "verb": "LINK",
                 "actor": "system", "ts": ts.isoformat(), "rev": None,
                 "thread_id": memory.thread_id, "old": None, "new": None, "meta": {"edges": edges}}
        self.table[memory.id] = [*self.history(memory.id), entry]
