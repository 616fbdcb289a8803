"""Settings of one concern: sinks: OpenSearch, S3 Vectors, pgvector and Chroma
(docs/configuration.md#sinks)."""
from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator, model_validator

from streams.errors import MemstreamError
from streams.settings.section import Section

MEMORY_STORES = ("s3vectors", "opensearch", "pgvector", "chroma")
"""The destinations `MEMORY_STORE` can name (`sinks.routing.DESTINATIONS` has a row for each)."""


class MemoryStoreError(MemstreamError, ValueError):
    """`MEMORY_STORE` names a destination memstream does not have, or one whose settings are
    missing: the worker refuses to start rather than silently copying nowhere."""


class SinksSettings(Section):
    """Sinks: OpenSearch, S3 Vectors, pgvector and Chroma."""

    title: ClassVar[str] = "Sinks: OpenSearch, S3 Vectors, pgvector and Chroma"
    about: ClassVar[str] = (
        'Copies of `memory.events` to other stores. `MEMORY_STORE` names the destinations; left '
        'unset, OpenSearch and S3 Vectors run when their settings are set and pgvector and Chroma '
        'never do; with no destination the in-worker index alone serves queries '
        '([operations.md](operations.md#sinks)).'
    )

    memory_store: str | None = Field(
        None, description="The destinations memories are mirrored to, comma-separated: any of "
        "s3vectors, opensearch, pgvector, chroma (e.g. `pgvector,chroma`). An unknown name, or a "
        "named destination without its settings (PGVECTOR_URL; CHROMA_PATH or CHROMA_URL; "
        "OPENSEARCH_URL), is an error at start. Unset: off, but OpenSearch and S3 Vectors still "
        "run when OPENSEARCH_URL, S3VECTORS_BUCKET + S3VECTORS_INDEX are set (as before it existed).",
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
    pgvector_url: str | None = Field(
        None, description="PostgreSQL URL (libpq: `postgresql://user:pass@host:5432/db`, or a "
        "socket directory as `?host=/path`) of the pgvector sink; needs the `vector` extension "
        "available (the sink creates it when absent).",
    )
    pgvector_schema: str = Field(
        "memstream", pattern=r"^[a-z_][a-z0-9_]{0,62}$", description="Schema of the pgvector sink's tables: "
        "LangGraph PostgresStore's `store` and `store_vectors` (one row each per memory), so a "
        "`PostgresStore` whose connection's `search_path` is it (and `public`, where the `vector` "
        "type is) reads memstream's memories.",
    )
    pgvector_timeout_seconds: float = Field(
        10.0, gt=0, description="Timeout of connecting to PostgreSQL and of one statement.",
    )
    chroma_path: str | None = Field(
        None, description="Directory of the Chroma sink's persistent client (embedded Chroma); "
        "or set CHROMA_URL for a Chroma server.",
    )
    chroma_url: str | None = Field(
        None, description="URL of a Chroma server (`chroma run`; e.g. `http://127.0.0.1:8000`); "
        "takes precedence over CHROMA_PATH.",
    )
    chroma_collection: str = Field(
        "memstream-memories", pattern=r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$",
        description="The Chroma collection of the deployment: one for all users, with user_id, "
        "type, category and state as metadata.",
    )
    chroma_timeout_seconds: float = Field(10.0, gt=0, description="Timeout of one Chroma server request.")
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

    @field_validator("memory_store")
    @classmethod
    def _known_stores(cls, value: str | None) -> str | None:
        """Normalised (lower case, no blanks, no repeats; empty: unset); an unknown name is refused."""
        if value is None:
            return None
        names = list(dict.fromkeys(n.strip().lower() for n in value.split(",") if n.strip()))
        unknown = [n for n in names if n not in MEMORY_STORES]
        if unknown:
            raise MemoryStoreError(f"MEMORY_STORE names {', '.join(unknown)}: the destinations are "
                                   f"{', '.join(MEMORY_STORES)}")
        return ",".join(names) or None

    @model_validator(mode="after")
    def _named_stores_have_settings(self) -> "SinksSettings":
        missing = {"pgvector": not self.pgvector_url, "opensearch": not self.opensearch_url,
                   "chroma": not (self.chroma_path or self.chroma_url)}
        needs = {"pgvector": "PGVECTOR_URL", "opensearch": "OPENSEARCH_URL",
                 "chroma": "CHROMA_PATH or CHROMA_URL"}
        lacking = [f"{name} needs {needs[name]}" for name in self.memory_stores if missing.get(name)]
        if lacking:
            raise MemoryStoreError(f"MEMORY_STORE={self.memory_store}: {'; '.join(lacking)}")
        return self

    @property
    def memory_stores(self) -> tuple[str, ...]:
        """The destinations MEMORY_STORE names, in its order."""
        return tuple(n for n in (self.memory_store or "").split(",") if n)
