"""The embedder the settings name, and its profile, for every part that needs them.

The worker (`streams.app.services`), the S3 Vectors sink and the LangGraph `S3VectorsStore` all
take the vector dimension from `embedder_profile(settings)`, so the index, the vectors the worker
writes and the query vectors of the store can never disagree.
"""
from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streams.settings import Settings
from streams.providers.embedders import BEDROCK, OPENAI, Embedder, EmbedderProfile, create_embedder, profile_of

if TYPE_CHECKING:  # imported with the bedrock kind only: botocore is slow to import, and large
    from streams.providers.embedders.openai_embedder import OpenAIEmbedOptions
    from streams.providers.embedders.titan import TitanOptions


def titan_options(settings: Settings) -> TitanOptions:
    """The BEDROCK_EMBED_* settings (and AWS_REGION) as the Titan embedder's options."""
    from streams.providers.embedders.titan import TitanOptions

    return TitanOptions(
        region=settings.aws.aws_region, model_id=settings.embedding.bedrock_embed_model_id,
        dimensions=settings.embedding.bedrock_embed_dimensions, concurrency=settings.embedding.bedrock_embed_concurrency,
        connect_timeout_s=settings.embedding.bedrock_embed_connect_timeout_seconds,
        read_timeout_s=settings.embedding.bedrock_embed_read_timeout_seconds,
        attempts=settings.embedding.bedrock_embed_attempts,
        backoff_initial_s=settings.embedding.bedrock_embed_backoff_initial_ms / 1000,
        backoff_max_s=settings.embedding.bedrock_embed_backoff_max_ms / 1000,
    )


def openai_options(settings: Settings) -> OpenAIEmbedOptions:
    """The OPENAI_EMBED_* settings as the openai embedder's options: its server and key are the
    LLM's (OPENAI_BASE_URL, OPENAI_API_KEY) unless OPENAI_EMBED_BASE_URL / _API_KEY name others."""
    from streams.providers.embedders.openai_embedder import OpenAIEmbedOptions

    e, llm = settings.embedding, settings.llm
    key = e.openai_embed_api_key or llm.openai_api_key
    return OpenAIEmbedOptions(
        model=e.openai_embed_model, base_url=e.openai_embed_base_url or llm.openai_base_url,
        api_key=key.get_secret_value() if key is not None else "", dimensions=e.openai_embed_dimensions,
        batch_size=e.openai_embed_batch_size, pool_tokens=e.openai_embed_pool_tokens,
        timeout_s=e.openai_embed_timeout_seconds, attempts=e.openai_embed_attempts,
    )


def embedder_profile(settings: Settings) -> EmbedderProfile:
    """The profile (name, dimension, dedup bands) of the EMBEDDER setting, without loading it;
    raises `EmbedderError` for an unknown kind. `openai` without OPENAI_EMBED_DIMENSIONS: the
    dimension is the server's, asked once per process unless a load already answered it (the
    worker loads its embedder as it starts)."""
    if settings.embedding.embedder == OPENAI:
        from streams.providers.embedders.openai_embedder import known_dimensions, openai_profile

        options = openai_options(settings)
        return openai_profile(options.model, known_dimensions(options))
    if settings.embedding.embedder == BEDROCK:
        return profile_of(BEDROCK, dimensions=settings.embedding.bedrock_embed_dimensions)
    return profile_of(settings.embedding.embedder)


def embedder_key(settings: Settings, cache_dir: Path | None) -> Hashable:
    """What identifies one loaded embedder: two settings with the same key share it."""
    if settings.embedding.embedder == BEDROCK:
        return (BEDROCK, titan_options(settings))
    if settings.embedding.embedder == OPENAI:
        return (OPENAI, openai_options(settings))
    return (settings.embedding.embedder, settings.embedding.embed_batch_size, cache_dir,
            settings.embedding.embedder_thread_spinning, settings.embedding.embedder_threads)


def build_embedder(settings: Settings, cache_dir: Path | None = None, *,
                   bedrock_client: Any | None = None) -> Embedder:
    """The embedder of the settings (loaded now). `bedrock_client`: the `bedrock-runtime` client
    of the `bedrock` kind (default: one from the AWS credential chain with BEDROCK_EMBED_* timeouts)."""
    if settings.embedding.embedder == BEDROCK:
        from streams.providers.embedders.titan import TitanV2Embedder

        return TitanV2Embedder.create(titan_options(settings), client=bedrock_client)
    if settings.embedding.embedder == OPENAI:
        from streams.providers.embedders.openai_embedder import OpenAIEmbedder, remember

        options = openai_options(settings)
        return remember(options, OpenAIEmbedder.create(options))
    return create_embedder(settings.embedding.embedder, settings.embedding.embed_batch_size, cache_dir,
                           spinning=settings.embedding.embedder_thread_spinning,
                           threads=settings.embedding.embedder_threads)
