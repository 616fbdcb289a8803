"""Settings of one concern: AWS (docs/configuration.md#aws)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streams.settings.section import Section


class AwsSettings(Section):
    """AWS."""

    title: ClassVar[str] = "AWS"
    about: ClassVar[str] = (
        "What every AWS client shares: the Bedrock embedder and LLM and the S3 Vectors sink "
        "([operations.md](operations.md#sinks)). Credentials come from the usual AWS chain."
    )

    aws_region: str = Field("us-east-1", description="AWS region of S3 Vectors and Bedrock.")
