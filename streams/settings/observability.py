"""Settings of one concern: logs and metrics (docs/configuration.md#observability)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streams.settings.section import Section


class ObservabilitySettings(Section):
    """Logs and metrics."""

    title: ClassVar[str] = "Logs and metrics"
    about: ClassVar[str] = (
        'What the worker logs and how often it refreshes its metrics '
        '([operations.md](operations.md#observability)).'
    )

    log_level: str = Field("info", description="The project's log level; libraries (Faust, Kafka, "
                           "the model's tools) log at WARNING unless it is debug.")
    metrics_lag_interval_seconds: float = Field(
        5.0, gt=0, description="How often a worker refreshes memstream_consumer_lag_records.",
    )
