"""EMBEDDER=openai run for real: the llama.cpp server of the `local-llm` extra (built once by
`./dev local-llm` and cached), serving SmolLM2-135M's `/v1/embeddings`, through the real `openai`
client.

What is checked is the protocol, not the model's embeddings (a 135M chat model's are poor): the
dimension read from the server's first answer (576) and held to, the per-token answer of a model
without pooling refused unless pooled, the same text embedded the same way each time, and a turn
through the in-process pipeline to a memory stored at that dimension and found by a query.
Skipped, saying why, only where the packages cannot be built here.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
import pytest

from streams.app.inprocess import InProcessPipeline
from streams.providers.embedders.configured import build_embedder, embedder_profile
from streams.providers.embedders.openai_embedder import OpenAIEmbedAnswerError, OpenAIEmbedder, OpenAIEmbedOptions
from streams.settings import Settings
from streams.tools.local_llm import LocalServer
from tests.integration.local_server import local_server
from topics.turns import Role, Turn

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CALL_GUARD_S = 600
"""A guard against a hung server, never a measure: the model embeds a sentence in milliseconds."""
SMOLLM2_DIM = 576
"""SmolLM2-135M's hidden size: what the server's first answer must say."""


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    yield from local_server(embedding=True)


def _settings(server: LocalServer, **overrides: object) -> Settings:
    return Settings(**{"embedder": "openai", "openai_embed_base_url": server.base_url,
                       "openai_embed_model": server.model, "openai_embed_batch_size": 1,
                       "openai_embed_pool_tokens": True, "openai_embed_timeout_seconds": CALL_GUARD_S,
                       "llm_provider": "none", "table_store": "memory://", **overrides})


async def test_the_dimension_is_the_servers_and_vectors_are_stable(server: LocalServer) -> None:
    settings = _settings(server)
    embedder = await asyncio.to_thread(build_embedder, settings)
    assert isinstance(embedder, OpenAIEmbedder)
    assert (embedder.profile.dim, embedder.profile.calibrated) == (SMOLLM2_DIM, False)
    assert embedder_profile(settings).dim == SMOLLM2_DIM, "the profile asks nothing more: the load answered"

    texts = ["Ana has a dog named Luna.", "Ana has a dog named Luna.", "The stock market fell."]
    vectors = await asyncio.wait_for(asyncio.to_thread(embedder.embed, texts), CALL_GUARD_S)

    assert vectors.shape == (3, SMOLLM2_DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(1.0, abs=1e-5), "the same text, the same vector"
    assert float(vectors[0] @ vectors[2]) < 0.99


async def test_a_model_without_pooling_answers_per_token_which_is_refused_unpooled(server: LocalServer) -> None:
    options = OpenAIEmbedOptions(model=server.model, base_url=server.base_url, batch_size=1,
                                 timeout_s=CALL_GUARD_S, attempts=1)
    with pytest.raises(OpenAIEmbedAnswerError, match="one vector per token"):
        await asyncio.wait_for(asyncio.to_thread(OpenAIEmbedder.create, options), CALL_GUARD_S)


async def test_a_turn_becomes_a_memory_found_through_the_servers_embeddings(server: LocalServer, tmp_path) -> None:
    settings = _settings(server, data_dir=tmp_path)
    embedder = await asyncio.to_thread(build_embedder, settings)
    pipeline = InProcessPipeline(settings, embedder)
    turn = Turn(user_id="ana", thread_id="t1", turn_id="1", role=Role.user, speaker="Ana",
                text="I adopted a dog named Luna yesterday. She is 3 years old and loves the beach!",
                ts=datetime(2023, 5, 8, 13, 56, tzinfo=UTC))

    await asyncio.wait_for(pipeline.ingest([turn]), CALL_GUARD_S)
    hits = await asyncio.wait_for(pipeline.query("ana", "What is the name of Ana's dog?", 5), CALL_GUARD_S)

    assert any("Luna" in hit.memory.summary for hit in hits), [h.memory.summary for h in hits]
    assert pipeline.services.profile().dim == SMOLLM2_DIM
    assert pipeline.store.index().dim == SMOLLM2_DIM, "the vector index is sized by the server's answer"
