"""Settings of one concern: consent for profile changes (docs/configuration.md#consent)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streams.settings.section import Section


class ConsentSettings(Section):
    """Consent for profile changes."""

    title: ClassVar[str] = "Consent for profile changes"
    about: ClassVar[str] = (
        'Which profile changes wait for the user ([architecture.md](architecture.md#consent)).'
    )

    consent_enabled: bool = Field(
        True, description="Changes of sensitive profile fields (preferred name, pronouns, city, "
        "language) wait for the user's consent; changes of benign ones (tone, goals) for a "
        "second statement or a trusted source. false: every change applies at once.",
    )
    consent_proposal_days: float = Field(
        7.0, gt=0, description="Event-time days a proposed profile change waits for consent before it expires.")
    consent_ack_window_minutes: float = Field(
        30.0, gt=0, description="A chat acknowledgement (\"yes, update it\") answers the thread's "
        "proposal made at most this many event-time minutes before.",
    )
    consent_trusted_confidence: float = Field(
        1.0, ge=0.0, le=1.0, description="A benign profile change this confident (1.0: an explicit "
        "\"remember …\") applies without corroboration, as does one from an external source.",
    )
