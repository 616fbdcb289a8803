"""Settings of one concern: privacy: the master key (docs/configuration.md#privacy)."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field, SecretStr

from streams.settings.section import Section


class PrivacySettings(Section):
    """Privacy: the master key."""

    title: ClassVar[str] = "Privacy: the master key"
    about: ClassVar[str] = (
        "The key that wraps every user's data key ([architecture.md](architecture.md#privacy), the "
        "operator's steps: [privacy.md](privacy.md))."
    )

    memstream_master_key: SecretStr | None = Field(
        None, description="Master key (32 bytes, url-safe base64; `memstream keys master` makes "
        "one) that wraps every user's data key; the same on every worker, never logged, never in "
        "Kafka. Required by `memstream worker`; `memstream run` makes one per data dir. During a "
        "rotation a comma-separated list (NEW,OLD): the first wraps, any unwraps "
        "(docs/privacy.md).",
    )
    master_key_file: Path | None = Field(
        None, description="File holding the master key (instead of MEMSTREAM_MASTER_KEY).",
    )
