"""What a caller may see of a user's memories: the one allowlist filter of every route.

An admin key sees every category; an agent key only the categories of its agent's allowlist in
the categories YAML (seed 001 §5), and an agent with no allowlist sees nothing (fail closed).
Every route and field that carries memory content asks a `Scope`: registry lists, reads,
history and export, the query's delta header and related memories, command outcomes, server-sent
events, blocked topics and consent proposals. What it may not see is left out, as if it did not
exist.

Everything is judged by its category:
- a memory, by its own;
- an event, a change-log line (the delta header) or a command outcome's event, by the category
  of the memory it is about; a content-free purge (no summary) is seen by everyone, so a client
  drops its copy of a memory it may have seen;
- a consent proposal, by the category of the fact it proposes;
- blocked topics, by `BLOCKED_TOPICS_CATEGORY`, the category their changes are announced under;
- a reference to another memory — a document's `related_ids`, `relations` (with their
  strengths), `consolidated_from`, `superseded_by`, an audit entry's `edges`, `into`, `from`,
  `promoted_from` — by that memory, as fetching it would be (`references`): a list, a query's
  full answer, an export and a history carry no id or score of what the caller may not see.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from streams.api.auth import AccessDenied, Principal
from streams.memory.model import Memory
from streams.read.categories import load_policy
from streams.read.errors import QueryForbidden

BLOCKED_TOPICS_CATEGORY = "Other"
"""Blocking a topic is announced as a change of a marker memory of this category
(`streams.memory.blocked_topics`), so the list of blocked topics is seen by whoever sees the
marker's events: the same rule for the list, the export, events and delta headers."""

Item = TypeVar("Item", bound=Mapping[str, Any])

REFERENCE_FIELDS = ("related_ids", "relations", "consolidated_from", "superseded_by")
"""The fields of a memory document that name other memories: a list of ids, a map of ids to
edge strengths, or one id."""
AUDIT_REFERENCE_FIELDS = ("edges", "superseded_by", "into", "from", "promoted_from",
                          "consolidated_from")
"""The fields of an audit entry's `meta` that name other memories (links, supersedes,
consolidation, promotion, insights)."""


@dataclass(frozen=True)
class Scope:
    """The categories (casefolded) a caller may see; None: all of them (an admin)."""

    categories: frozenset[str] | None

    @classmethod
    def of(cls, principal: Principal, categories_path: Path | None) -> "Scope":
        """The caller's scope; raises `AccessDenied` for an agent without an allowlist."""
        if principal.is_admin:
            return cls(None)
        try:
            return cls(load_policy(categories_path).allowed(principal.agent_id))
        except QueryForbidden:
            raise AccessDenied("this agent has no category allowlist") from None

    def narrowed(self, categories: Iterable[str]) -> "Scope":
        """This scope, further limited to `categories` (a query's): never wider."""
        asked = frozenset(c.casefold() for c in categories)
        return Scope(asked if self.categories is None else self.categories & asked)

    # --- the decision -----------------------------------------------------------------------
    def sees(self, category: str | None) -> bool:
        """Whether content of `category` may be shown (none: only to an admin)."""
        if self.categories is None:
            return True
        return bool(category) and str(category).casefold() in self.categories

    def sees_memory(self, memory: Memory) -> bool:
        return self.sees(memory.category)

    def sees_event(self, event: Mapping[str, Any]) -> bool:
        """An event or change-log line (`kind`, `category`, `summary`)."""
        if event.get("kind") == "purged" and not event.get("summary"):
            return True
        return self.sees(event.get("category"))

    def sees_proposal(self, proposal: Mapping[str, Any]) -> bool:
        return self.sees(proposal.get("category"))

    @property
    def sees_blocked_topics(self) -> bool:
        return self.sees(BLOCKED_TOPICS_CATEGORY)

    # --- filters over what a route returns ----------------------------------------------------
    def memories(self, memories: Iterable[Memory]) -> list[Memory]:
        return [m for m in memories if self.sees_memory(m)]

    def events(self, events: Iterable[Item]) -> list[Item]:
        """Events, change-log lines or command-outcome events the caller may see."""
        return [e for e in events if self.sees_event(e)]

    def proposals(self, proposals: Iterable[Item]) -> list[Item]:
        return [p for p in proposals if self.sees_proposal(p)]

    def blocked_topics(self, topics: list[str]) -> list[str]:
        return topics if self.sees_blocked_topics else []

    def related(self, related: Iterable[Item]) -> list[Item]:
        """A query item's related memories (`{id, category, summary, strength}`); one without a
        category is left out."""
        return [r for r in related if self.sees(r.get("category"))]

    def references(self, doc: Mapping[str, Any], visible: Callable[[str], bool],
                   fields: Iterable[str] = REFERENCE_FIELDS) -> dict[str, Any]:
        """`doc` without its references (`fields`) to memories the caller may not see:
        `visible(memory_id)` is whether fetching that memory would show it (a memory of the
        user's, in this scope). An admin sees every reference."""
        out = dict(doc)
        if self.categories is None:
            return out
        for name in fields:
            value = out.get(name)
            if isinstance(value, str):
                out[name] = value if visible(value) else None
            elif isinstance(value, list):
                out[name] = [v for v in value if isinstance(v, str) and visible(v)]
            elif isinstance(value, Mapping):
                out[name] = {k: v for k, v in value.items() if visible(k)}
        return out

    def audit_entry(self, entry: Mapping[str, Any], visible: Callable[[str], bool]) -> dict[str, Any]:
        """An audit entry with its meta's references to memories the caller may not see left out."""
        meta = entry.get("meta")
        if self.categories is None or not isinstance(meta, Mapping):
            return dict(entry)
        return {**entry, "meta": self.references(meta, visible, AUDIT_REFERENCE_FIELDS)}
