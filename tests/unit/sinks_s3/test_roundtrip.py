"""A memory the worker writes goes through the S3 Vectors sink and comes back through the
LangGraph `S3VectorsStore`, for the local embedder and for Bedrock Titan V2.

Everything is real but the AWS services: the worker embeds the fact (`Services.embed`) and makes
the memory document (`new_memory`), `memory_records` turns its event into the sink's record, the
sink lays it out in the index, and the store, built from the same settings, embeds the query with
the same embedder. S3 Vectors is moto (+ the QueryVectors fake); Titan is the fake
`bedrock-runtime` client of the conftest (it checks each request's body), or the real services
with MEMSTREAM_AWS_IT=1.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sinks.base import PermanentSinkError
from sinks.langgraph_store import S3VectorsStore
from sinks.routing import memory_records
from sinks.s3vectors import S3VectorsDestination, index_dimension
from sinks.s3vectors_index import IndexMismatchError
from streams.app.services import Services
from streams.memory import ids
from streams.memory.documents import new_memory
from streams.providers.embedders import Embedder
from streams.providers.embedders.configured import build_embedder
from tests.unit.sinks_s3.conftest import Backend, FakeBedrockRuntime
from topics.candidates import Candidate, Fact
from topics.events import MemoryEvent
from topics.turns import Role, Turn

TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
FACTS = ["Ana has a dog named Luna.", "Ana works as a nurse in Lisbon.", "Ana drinks green tea every morning."]


def embedder_for(kind: str, backend: Backend, minilm: Any) -> Embedder:
    if kind == "local":
        return minilm
    settings = backend.settings("unused")
    return build_embedder(settings, bedrock_client=backend.bedrock)


async def written_memory(services: Services, text: str, index: int) -> tuple[MemoryEvent, dict[str, Any]]:
    """What the worker's write stage makes of one extracted fact: the memory and its event."""
    turn = Turn(user_id="ana", thread_id="t1", turn_id=str(index), role=Role.user, speaker="Ana",
                text=text, ts=TS)
    candidate = Candidate(turn=turn, fact=Fact(type="semantic", summary=text, category="Personal"),
                          fact_index=0, fact_count=1, confidence=0.9)
    memory_id = ids.memory_id("ana", "t1", str(index), 0)
    (vector,) = await services.embed([text])
    memory = new_memory(candidate, memory_id, vector)
    event = MemoryEvent(event_id=ids.event_id(memory_id, "created", 1), kind="created", user_id="ana",
                        thread_id="t1", memory_id=memory_id, rev=index + 1, ts=TS, summary=text,
                        category="Personal")
    return event, memory.model_dump(mode="json")


@pytest.mark.parametrize("kind", ["local", "bedrock"])
async def test_a_memory_written_by_the_sink_is_read_back_by_the_store(
        backend: Backend, kind: str, minilm_embedder: Any) -> None:
    index = backend.new_index()
    settings = backend.settings(index, embedder=kind)
    embedder = embedder_for(kind, backend, minilm_embedder)
    services = Services(settings, embedder=embedder)

    written = [await written_memory(services, text, i) for i, text in enumerate(FACTS)]
    sink = S3VectorsDestination(settings, client=backend.client(index))
    await sink.start()
    records = [r for event, document in written for r in memory_records(event, {}, {event.memory_id: document})]
    assert await sink.write(records) == []

    store = S3VectorsStore.from_settings(settings, vectors=backend.client(index), embedder=embedder)
    expected_dim = 384 if kind == "local" else 256
    assert store.dims == index_dimension(settings) == services.profile().dim == expected_dim
    assert backend.client(index).describe_index().dimension == expected_dim

    luna_event, luna = written[0]
    item = store.get(("ana", "semantic"), luna_event.memory_id)
    assert item is not None and item.value == {k: v for k, v in luna.items() if k not in ("embedding_b64", "context_b64")}
    found = store.search(("ana", "semantic"), query="What is the name of Ana's dog?", limit=1)
    assert [i.key for i in found] == [luna_event.memory_id]
    assert found[0].score is not None and found[0].score > 0.3
    if kind == "bedrock" and isinstance(backend.bedrock, FakeBedrockRuntime):
        sent = backend.bedrock.requests
        assert [r["inputText"] for r in sent] == [*FACTS, "What is the name of Ana's dog?"]
        assert {(r["dimensions"], r["normalize"]) for r in sent} == {(256, True)}


async def test_an_index_of_another_embedders_dimension_is_refused(backend: Backend, minilm_embedder: Any) -> None:
    """A 384 d index (made with the local embedder) opened by a worker switched to Titan: the sink
    and the store both refuse it, naming the dimensions, instead of writing 256 d vectors."""
    index = backend.new_index()
    await S3VectorsDestination(backend.settings(index, embedder="local"), client=backend.client(index)).start()
    titan_settings = backend.settings(index)  # EMBEDDER=bedrock, 256 d
    titan = build_embedder(titan_settings, bedrock_client=backend.bedrock)

    with pytest.raises(PermanentSinkError, match="has dimension 384, but the embeddings have 256"):
        await S3VectorsDestination(titan_settings, client=backend.client(index)).start()
    with pytest.raises(IndexMismatchError, match="has dimension 384, but the embeddings have 256"):
        S3VectorsStore.from_settings(titan_settings, vectors=backend.client(index), embedder=titan)
    with pytest.raises(IndexMismatchError, match="the embedder has 384 dimensions; EMBEDDER=bedrock embeds in 256"):
        S3VectorsStore.from_settings(titan_settings, vectors=backend.client(index), embedder=minilm_embedder)
