"""How the memory operations are tuned: the dedup decision (`DedupConfig`, with its consent
policy `ConsentConfig`) and the matching of described memories by commands (`CommandConfig`).

Plain settings, below every operation and `MemoryState` (which carries them), so that the state
imports no operation to know its configuration.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from streams.memory.documents import keys_match
from streams.providers.embedders import EmbedderProfile

SENSITIVE_FIELDS: Mapping[str, str] = {
    "profile:name": "preferred_name", "profile:pronouns": "pronouns",
    "profile:home:city": "city", "profile:language": "language",
}
"""Entity key -> field name of the fields whose changes need consent (seed 001 §10)."""
BENIGN_FIELDS: Mapping[str, str] = {"profile:tone": "tone", "profile:goals": "goals"}
"""Entity key -> field name of the fields whose changes need corroboration."""


@dataclass(frozen=True)
class ConsentConfig:
    """Which profile fields need consent or corroboration, and how long a proposal waits."""

    enabled: bool = True
    sensitive: Mapping[str, str] = field(default_factory=lambda: dict(SENSITIVE_FIELDS))
    benign: Mapping[str, str] = field(default_factory=lambda: dict(BENIGN_FIELDS))
    proposal_ttl: timedelta = timedelta(days=7)
    ack_window: timedelta = timedelta(minutes=30)
    trusted_sources: frozenset[str] = frozenset({"external"})
    trusted_confidence: float = 1.0

    def field_of(self, entity_key: str | None) -> tuple[str, str] | None:
        """(field, "sensitive" | "benign") of an entity key that consent governs."""
        if not self.enabled or not entity_key:
            return None
        for kind, fields in (("sensitive", self.sensitive), ("benign", self.benign)):
            for key, name in fields.items():
                if keys_match(key, entity_key):
                    return name, kind
        return None


@dataclass(frozen=True)
class DedupConfig:
    """How candidates are matched to a user's memories: the embedder profile's bands, how many
    neighbours are searched, the episodic merge window, whether the heuristics may decide a
    same-fact check, and the score from which neighbours are linked; and the consent policy for
    profile changes (`streams.memory.consent`)."""

    profile: EmbedderProfile
    neighbours_k: int = 10
    episodic_merge_window: timedelta = timedelta(hours=72)
    use_heuristics: bool = True
    link_min: float = 0.6
    write_rate_limit_per_hour: int = 0
    """New memories per user per event-time hour before they are down-ranked (0: no limit)."""
    consent: ConsentConfig = field(default_factory=ConsentConfig)


@dataclass(frozen=True)
class CommandConfig:
    """How a described memory ("forget my old address") is matched to stored ones."""

    match_min: float = 0.5
    match_max: int = 3
