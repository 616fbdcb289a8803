"""Ingest embeds each candidate's texts into the worker's `TextVectors`, so the model's time
overlaps dedup's work in a worker; dedup embeds only what it does not find there (or in a
candidate written before, which carries its vectors)."""
from __future__ import annotations

import numpy as np

from streams.settings import Settings
from streams.memory.vector_index import INT8_PREFIX, decode_vector, encode_vector
from streams.pipeline.dedup import carried_vector
from streams.app.inprocess import InProcessPipeline
from tests.unit.app.test_inprocess import turn
from topics.candidates import Candidate, Fact


def counted(pipeline: InProcessPipeline) -> list[list[str]]:
    """The texts each dedup model call embeds."""
    calls: list[list[str]] = []
    real = pipeline.dedup_stage.embed

    async def embed(texts):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        return await real(texts)

    pipeline.dedup_stage.embed = embed
    return calls


async def test_dedup_uses_the_vector_ingest_computed(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    calls = counted(pipeline)
    await pipeline.ingest([turn("1", "I adopted a dog named Luna last year.")])
    assert pipeline.outcomes() == {"created": 1}
    assert calls == [], "dedup did not run the model"
    [memory] = pipeline.store.user_memories("ana")
    stored = decode_vector(pipeline.tables.memories[memory.id]["embedding_b64"])
    expected = minilm_embedder.embed([memory.summary])[0]
    assert float(np.dot(stored, expected)) > 0.999
    context = pipeline.tables.memories[memory.id]["context_b64"]
    assert context.startswith(INT8_PREFIX), "its context vector travels and is stored in int8"


async def test_without_ingest_vectors_dedup_embeds(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    pipeline.ingest_stage.embed = None
    calls = counted(pipeline)
    await pipeline.ingest([turn("1", "I adopted a dog named Luna last year.")])
    assert pipeline.outcomes() == {"created": 1}
    assert len(calls) == 1


def test_a_vector_of_another_size_or_damaged_is_not_used():
    base = Candidate.model_validate({
        "turn": turn("1", "x").model_dump(mode="json"), "fact": Fact(type="semantic", summary="A."),
        "fact_index": 0, "fact_count": 1, "confidence": 0.9})
    right = base.model_copy(update={"vector_b64": encode_vector(np.ones(4, dtype=np.float32))})
    assert carried_vector(right, 4) is not None
    assert carried_vector(right, 384) is None
    assert carried_vector(base.model_copy(update={"vector_b64": "%%%"}), 4) is None
    assert carried_vector(base, 4) is None
