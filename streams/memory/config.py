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
from streams.settings import ConsentSettings, DedupSettings

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

    enabled: bool
    proposal_ttl: timedelta
    ack_window: timedelta
    trusted_confidence: float
    sensitive: Mapping[str, str] = field(default_factory=lambda: dict(SENSITIVE_FIELDS))
    benign: Mapping[str, str] = field(default_factory=lambda: dict(BENIGN_FIELDS))
    trusted_sources: frozenset[str] = frozenset({"external"})

    @classmethod
    def of(cls, consent: ConsentSettings) -> ConsentConfig:
        return cls(enabled=consent.consent_enabled,
                   proposal_ttl=timedelta(days=consent.consent_proposal_days),
                   ack_window=timedelta(minutes=consent.consent_ack_window_minutes),
                   trusted_confidence=consent.consent_trusted_confidence)

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
    neighbours_k: int
    episodic_merge_window: timedelta
    use_heuristics: bool
    link_min: float
    write_rate_limit_per_hour: int
    """New memories per user per event-time hour before they are down-ranked (0: no limit)."""
    consent: ConsentConfig

    @classmethod
    def of(cls, profile: EmbedderProfile, dedup: DedupSettings, consent: ConsentSettings) -> DedupConfig:
        """The dedup settings over `profile`, whose bands the settings already overrode."""
        return cls(
            profile=profile, neighbours_k=dedup.memory_neighbors_k, link_min=dedup.link_min,
            episodic_merge_window=timedelta(hours=dedup.episodic_merge_window_hours),
            use_heuristics=dedup.memory_enable_entity_heuristics,
            write_rate_limit_per_hour=dedup.memory_write_rate_limit_per_hour,
            consent=ConsentConfig.of(consent))


@dataclass(frozen=True)
class CommandConfig:
    """How a described memory ("forget my old address") is matched to stored ones."""

    match_min: float = 0.5
    match_max: int = 3
