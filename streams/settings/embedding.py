"""Settings of one concern: embedder (docs/configuration.md#embedding)."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, SecretStr

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
        "BEDROCK_EMBED_*). openai: any OpenAI-compatible /v1/embeddings (OpenAI, Ollama, vLLM, "
        "llama.cpp, LM Studio; OPENAI_EMBED_*), its dimension the server's first answer, its bands "
        "and score curve uncalibrated until measured ([llm.md](llm.md#embeddings)). Each has its own "
        "dedup bands; switching keeps the vectors already stored.",
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
    openai_embed_model: str = Field(
        "text-embedding-3-small", description="EMBEDDER=openai: the embedding model the server "
        "is asked for (Ollama: e.g. nomic-embed-text; llama.cpp: the server's model alias).",
    )
    openai_embed_base_url: str | None = Field(
        None, description="EMBEDDER=openai: base URL of the embeddings server, up to /v1, when it "
        "is not the LLM's; unset: OPENAI_BASE_URL (unset too: api.openai.com).",
    )
    openai_embed_api_key: SecretStr | None = Field(
        None, description="EMBEDDER=openai: API key of the embeddings server when it is not the "
        "LLM's; unset: OPENAI_API_KEY. Never logged; local servers need none.",
    )
    openai_embed_dimensions: int | None = Field(
        None, ge=1, le=16384, description="EMBEDDER=openai: unset (default): the model's "
        "dimension, read from the server's first answer (the embedder's load asks once). Set: "
        "sent as the request's `dimensions` (OpenAI's text-embedding-3 shorten their vectors; a "
        "server that takes no such parameter may refuse it) and known without asking. Either "
        "way every answer is checked against it: a server that answers in another dimension "
        "fails the batch, it never reaches the index.",
    )
    openai_embed_batch_size: int = Field(
        64, ge=1, le=2048, description="EMBEDDER=openai: texts per /v1/embeddings request "
        "(OpenAI takes up to 2,048). 1 for llama-cpp-python serving a model without a pooling "
        "layer: it embeds the texts of one request wrongly (identical texts at cosine -0.1).",
    )
    openai_embed_pool_tokens: bool = Field(
        False, description="EMBEDDER=openai: a server answering one vector per token (llama-cpp-"
        "python serving a chat model such as SmolLM2, which has no pooling layer): true, their "
        "mean is the text's vector; false, such an answer is an error.",
    )
    openai_embed_timeout_seconds: float = Field(
        10.0, gt=0, description="EMBEDDER=openai: timeout of one /v1/embeddings request.",
    )
    openai_embed_attempts: int = Field(
        4, ge=1, le=10, description="EMBEDDER=openai: attempts per request on 429, 5xx, timeouts "
        "and connection errors (the SDK's own retries are off), with exponential backoff from "
        "0.1 s to 5 s and full jitter; other errors fail at once.",
    )
