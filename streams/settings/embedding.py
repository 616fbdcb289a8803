"""Settings of one concern: embedder (docs/configuration.md#embedding)."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from streams.settings.section import Section


class EmbeddingSettings(Section):
    """Embedder."""

    title: ClassVar[str] = "Embedder"
    about: ClassVar[str] = (
        'The model that embeds summaries and queries '
        '([architecture.md](architecture.md#embedders)). Choose it before the first memory: stored '
        'vectors keep the model they were made with.'
    )

    embedder: str = Field(
        "local-int8",
        description="local: all-MiniLM-L6-v2 in fp32 through sentence-transformers (the "
        "reference). local-int8 (default): the same model on ONNX Runtime with int8 weights (3-4x the "
        "texts/s of local in batches, 13x+ one at a time; cosine 0.99 to local's vectors; LoCoMo "
        "recall within 0.6 points). local-onnx: fp32 on ONNX Runtime (local's vectors; faster one "
        "at a time only). bedrock: Amazon Titan Text Embeddings V2 through Bedrock (production; "
        "BEDROCK_EMBED_*). Each has its own dedup bands; switching keeps the vectors already stored.",
    )
    embedder_cache_dir: Path | None = Field(
        None, description="Where local-onnx/local-int8 keep the ONNX file they make on first load "
        "(written once, atomically, so workers may share it); unset: DATA_DIR/models.",
    )
    embed_batch_size: int = Field(32, description="Texts embedded per model call.")
    embedder_thread_spinning: bool = Field(
        False,
        description="Let the ONNX embedders' threads spin-wait between model calls (ONNX "
        "Runtime's default). Fastest for the model alone, but in a worker the spinning threads "
        "take the core its event loop needs: off, a 2-core worker draining a backlog used a "
        "quarter less CPU and drained a quarter more turns/s.",
    )
    embedder_threads: int | None = Field(
        None, ge=1, le=64,
        description="local-int8: texts embedded at once, one thread each (a run of one text "
        "gains little from threads of its own); local-onnx: threads of one model run. Unset: "
        "the cores this process may use (its CPU affinity and container CPU quota), at most 4.",
    )
    bedrock_embed_model_id: str = Field("amazon.titan-embed-text-v2:0", description="Bedrock embedding model.")
    bedrock_embed_dimensions: Literal[256, 512, 1024] = Field(
        1024, description="Output dimension of Titan V2 (EMBEDDER=bedrock); the S3 Vectors index "
        "has the embedder's dimension (local kinds 384), so changing it needs a new index.",
    )
    bedrock_embed_concurrency: int = Field(
        8, ge=1, le=64, description="Titan calls in flight at once per worker (Titan embeds one "
        "text per call; a batch runs its calls on a pool this large).",
    )
    bedrock_embed_connect_timeout_seconds: float = Field(2.0, gt=0, description="Connect timeout of one Titan call.")
    bedrock_embed_read_timeout_seconds: float = Field(10.0, gt=0, description="Read timeout of one Titan call.")
    bedrock_embed_attempts: int = Field(
        4, ge=1, le=10, description="Attempts per text on throttling, 5xx and timeouts (botocore's "
        "own retries are off), with exponential backoff and full jitter.",
    )
    bedrock_embed_backoff_initial_ms: int = Field(100, ge=1, description="Scale of the first Titan retry backoff.")
    bedrock_embed_backoff_max_ms: int = Field(5000, ge=1, description="Longest Titan retry backoff.")
