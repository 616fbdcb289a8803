"""Settings of one concern: sinks: opensearch and s3 vectors (docs/configuration.md#sinks)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streams.settings.section import Section


class SinksSettings(Section):
    """Sinks: OpenSearch and S3 Vectors."""

    title: ClassVar[str] = "Sinks: OpenSearch and S3 Vectors"
    about: ClassVar[str] = (
        'Copies of `memory.events` to other stores; a sink runs only when its settings are set '
        '([operations.md](operations.md#sinks)).'
    )

    s3v_bucket: str = Field("memstream-vectors", description="S3 Vectors bucket.")
    s3v_index_memory: str = Field("memory-search", description="S3 Vectors index of all users.")
    s3v_distance: str = Field("cosine", description="Distance metric of the index.")
    opensearch_url: str | None = Field(
        None, description="OpenSearch URL of the audit/events sink; unset: the OpenSearch sink is off.",
    )
    opensearch_index_prefix: str = Field(
        "memstream", description="Prefix of the sink's indices (<prefix>-events-YYYY.MM, <prefix>-audit-YYYY.MM).",
    )
    opensearch_timeout_seconds: float = Field(10.0, gt=0, description="Timeout of one OpenSearch request.")
    s3vectors_bucket: str | None = Field(
        None, description="S3 Vectors bucket of the vectors sink (overrides S3V_BUCKET); unset "
        "(or S3VECTORS_INDEX unset): the S3 Vectors sink is off.",
    )
    s3vectors_index: str | None = Field(
        None, description="S3 Vectors index of the vectors sink (overrides S3V_INDEX_MEMORY).",
    )
    sink_batch_size: int = Field(200, ge=1, description="Records a sink writes per batch at most.")
    sink_batch_max_age_ms: int = Field(500, ge=0, description="Longest a record waits for its batch to fill.")
    sink_buffer_records: int = Field(
        2000, ge=1, description="Records a sink holds unwritten at most; then the sink agent waits "
        "(backpressure) and the consumer pauses. At least SINK_BATCH_SIZE.",
    )
    sink_retry_attempts: int = Field(
        0, ge=0, description="Attempts of a batch write on transient errors (the destination down "
        "or slow) before its records go to memory.sinks.dlq. 0: no limit — a destination that is "
        "away is a passing fault, so the sink waits and retries (its consumer pauses; the stages "
        "go on) and nothing is dead-lettered for it.",
    )
    sink_retry_initial_ms: int = Field(100, ge=1, description="First retry backoff; doubles per attempt, plus jitter.")
    sink_retry_max_ms: int = Field(5000, ge=1, description="Longest retry backoff.")
