"""The runtime configs a test builds, from the settings' own defaults (`streams.settings`), with
the changes the test names: there are no second defaults to drift from the settings."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from streams.lifecycle.forgetting import ForgetConfig
from streams.memory.config import ConsentConfig, DedupConfig
from streams.proactivity.policy import ProactivityPolicy
from streams.providers.embedders import EmbedderProfile
from streams.read.fusion import Retrieval
from streams.read.query import QueryLimits
from streams.read.ranking import RankWeights, weights_of
from streams.settings import (ConsentSettings, DedupSettings, EpisodicSettings, LifecycleSettings,
                              ProactivitySettings,
                              ReadSettings, WriteSettings)
from streams.write.episodic import EpisodeRules, rules_from


def weights(**changes: Any) -> RankWeights:
    return replace(weights_of(ReadSettings()), **changes)


def retrieval(**changes: Any) -> Retrieval:
    return replace(Retrieval.of(ReadSettings()), **changes)


def limits(**changes: Any) -> QueryLimits:
    return replace(QueryLimits.of(ReadSettings()), **changes)


def proactivity(**changes: Any) -> ProactivityPolicy:
    return replace(ProactivityPolicy.of(ProactivitySettings()), **changes)


def episode_rules(**changes: Any) -> EpisodeRules:
    return replace(rules_from(EpisodicSettings(), WriteSettings()), **changes)


def consent(**changes: Any) -> ConsentConfig:
    return replace(ConsentConfig.of(ConsentSettings()), **changes)


def dedup(profile: EmbedderProfile, **changes: Any) -> DedupConfig:
    """The dedup settings over `profile`, with no write budget unless `changes` set one (the
    tests that write many memories in an event-time hour are not about the budget)."""
    return replace(DedupConfig.of(profile, DedupSettings(), ConsentSettings()),
                   **{"write_rate_limit_per_hour": 0, **changes})


def forget(**changes: Any) -> ForgetConfig:
    return replace(ForgetConfig.of(LifecycleSettings()), **changes)
