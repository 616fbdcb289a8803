"""Settings of one concern: lifecycle: forgetting, consolidation, promotion, insights (docs/configuration.md#lifecycle)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streams.settings.section import Section


class LifecycleSettings(Section):
    """Lifecycle: forgetting, consolidation, promotion, insights."""

    title: ClassVar[str] = "Lifecycle: forgetting, consolidation, promotion, insights"
    about: ClassVar[str] = (
        'The passes that run per user on the event-time watermark '
        '([architecture.md](architecture.md#lifecycle); what forgetting buys and costs: '
        '[forgetting.md](forgetting.md)).'
    )

    memory_cap: int = Field(
        200, ge=1, description="Active semantic memories per user at most (seed 004); the lifecycle "
        "archives the lowest decay weight, then the least recently used, never a pinned one (the "
        "archive is the cold tier: searchable, restorable).",
    )
    ttl_days: int = Field(60, description="Days without access before a TTL soft-delete.")
    ttl_importance_max: int = Field(
        1, ge=0, le=5, description="Only memories this unimportant are TTL-deleted, then purged: "
        "1 is small talk (streams/write/importance.py); 0 turns the TTL off.")
    purge_after_days: int = Field(30, description="Days from soft-delete to purge.")
    archive_weight_min: float = Field(
        0.05, ge=0.0, description="Decay weight (seed 000 §6) under which an unused memory is archived.",
    )
    archive_unused_days: int = Field(
        30, ge=0, description="Days without access before a memory may be archived for its decay weight.",
    )
    archive_retention_days: int | None = Field(
        None, ge=1, description="A retention window: days an archived memory (decayed, over the cap, "
        "or an original a consolidation replaced) is kept before it is soft-deleted, then purged "
        "after PURGE_AFTER_DAYS. Unset (the default): the archive is kept, searchable, until the "
        "user or an operator removes it (docs/decisions.md; seed 000 §6 suggests 180).")
    lifecycle_enabled: bool = Field(
        True, description="Run the lifecycle passes (forgetting, promotion, consolidation, "
        "insights, consent expiry) after each dedup record.")
    lifecycle_period_hours: int = Field(
        24, ge=1, description="Event-time hours between two lifecycle runs for one user.",
    )
    lifecycle_users_per_record: int = Field(
        2, ge=1, description="Idle users whose lifecycle one processed record may run (bounds the "
        "work a record adds to its partition).",
    )
    lifecycle_max_changes: int = Field(
        100, ge=1, description="Transitions one lifecycle pass makes for one user per run at most; "
        "the rest wait for the next run.",
    )
    consolidation_window_days: int = Field(
        7, ge=1, description="Episodes clustered into one consolidated memory lie within this "
        "many days of each other.",
    )
    consolidation_lookback_days: int = Field(90, ge=1, description="Age of the oldest episode consolidation considers.")
    consolidation_min_similarity: float = Field(
        0.6, ge=0.0, le=1.0, description="Cosine at which two episodes may share a cluster "
        "(calibrated on all-MiniLM-L6-v2: episodes of one theme score 0.6-0.9).",
    )
    consolidation_max_candidates: int = Field(200, ge=2, description="Most recent episodes one consolidation run reads per user.")
    consolidation_max_pairs: int = Field(
        50, ge=1, description="Episode pairs one consolidation run checks per user (seed 001 §4: ≤ 50/day).",
    )
    consolidation_max_clusters: int = Field(10, ge=1, description="Consolidated memories one run makes per user.")
    consolidation_max_cluster_size: int = Field(8, ge=2, description="Episodes one consolidated memory merges at most.")
    consolidation_fingerprint_days: int = Field(
        14, ge=1, description="Days a checked pair that was not merged is not checked again.",
    )
    promotion_min_repeats: int = Field(3, ge=2, description="Mentions of one fact among episodes that promote it to semantic.")
    promotion_window_days: int = Field(60, ge=1, description="The mentions must fall within this many days.")
    promotion_min_similarity: float = Field(
        0.85, ge=0.0, le=1.0, description="Cosine at which two episodic memories state the same fact "
        "(all-MiniLM-L6-v2: repeats of one fact score 0.9+, distinct events of one trip 0.75-0.85).",
    )
    promotion_canonical_similarity: float = Field(
        0.75, ge=0.0, le=1.0, description="Cosine at which a pinned or user-set semantic fact is on "
        "the same subject as a promotion, which it then prevents.",
    )
    promotion_min_trust: float = Field(0.7, ge=0.0, le=1.0, description="Mean trust the mentions need.")
    promotion_review_below: float = Field(
        0.9, ge=0.0, le=1.0, description="A promotion less confident than this is tagged needs_review (seed 000 §7).",
    )
    promotion_pattern_lift: float = Field(
        0.22, ge=0.0, le=2.0,
        description="A pattern (episodes that share a topic word, e.g. three pottery classes) is "
        "promoted when their mean pairwise cosine exceeds their mean cosine to the user's other "
        "episodes by this; below it the shared word is generic ('went', 'photo': 0.06-0.19 on "
        "the LoCoMo dev set, topics 0.25-0.54). Calibrated for MiniLM.")
    promotion_max_per_run: int = Field(5, ge=1, description="Semantic memories one promotion run makes per user.")
    insight_interval_hours: int = Field(
        24, ge=1, description="Event-time hours between two theory-of-mind runs of a user (needs an LLM).",
    )
    insight_activity_items: int = Field(5, ge=1, le=20, description="Recent episodes an insight run reads.")
    insight_semantic_items: int = Field(3, ge=0, le=20, description="New semantic memories an insight run reads.")
