"""S3VectorsStore (LangGraph BaseStore) against a backend: moto + QueryVectors fake + Titan at the
client boundary, or S3 Vectors and Bedrock themselves."""
from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from sinks.base import SinkRecord
from sinks.langgraph_store import EmbedderTexts, MissingIndexFieldError, S3VectorsStore, UnsupportedFilterError
from sinks.s3vectors import S3VectorsDestination
from sinks.s3vectors_filter import InvalidFilterError
from streams.providers.embedders.titan import TitanV2Embedder
from tests.unit.sinks_s3.conftest import DIM, Backend, FakeBedrockRuntime, memory_document

ANA = ("ana", "semantic")
FACTS = {
    "luna": ("Ana has a dog named Luna.", "Personal"),
    "nurse": ("Ana works as a nurse in Lisbon.", "Personal"),
    "budget": ("Ana saves 300 euros a month for a trip.", "Finance"),
    "dog-walk": ("Ana walks her dog Luna every morning.", "Personal"),
    "tea": ("Ana drinks green tea.", "Personal"),
}


@pytest.fixture
def index(backend: Backend) -> str:
    return backend.new_index()


@pytest.fixture
def store(backend: Backend, index: str) -> S3VectorsStore:
    store = S3VectorsStore(backend.client(index), EmbedderTexts(TitanV2Embedder(backend.bedrock, dimensions=DIM)))
    store.setup()
    return store


def put_facts(store: S3VectorsStore) -> None:
    for key, (summary, category) in FACTS.items():
        store.put(ANA, key, {"summary": summary, "category": category, "type": "semantic"})


def embedded(backend: Backend) -> list[str]:
    """The texts Titan was asked to embed (the fake records them)."""
    assert isinstance(backend.bedrock, FakeBedrockRuntime)
    return [r["inputText"] for r in backend.bedrock.requests]


def test_put_get_and_search(store: S3VectorsStore) -> None:
    store.put(ANA, "luna", {"summary": "Ana has a dog named Luna.", "category": "Personal"})

    item = store.get(ANA, "luna")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (ANA, "luna", {"summary": "Ana has a dog named Luna.",
                                                                    "category": "Personal"})
    assert item.created_at == item.updated_at
    (hit,) = store.search(ANA, query="Ana's dog Luna")
    assert hit.key == "luna" and hit.score is not None and 0 < hit.score <= 1
    assert store.get(ANA, "nobody") is None
    assert store.get(("bo", "semantic"), "luna") is None


def test_index_none_embeds_the_default_field_and_false_embeds_nothing(backend: Backend, store: S3VectorsStore) -> None:
    if backend.name != "moto":
        pytest.skip("inspects the requests to Titan")
    store.put(ANA, "a", {"summary": "Ana has a dog.", "note": "ignored"})
    store.put(ANA, "b", {"summary": "Ana has a cat."}, index=False)
    store.put(ANA, "c", {"title": "Trip", "body": {"text": "Ana flies to Rome."}}, index=["title", "body.text"])
    assert embedded(backend) == ["Ana has a dog.", "Trip\nAna flies to Rome."]


def test_unindexed_items_are_got_and_listed_but_never_found_by_a_query(store: S3VectorsStore) -> None:
    store.put(ANA, "cat", {"summary": "Ana has a cat named Mimi.", "category": "Personal"}, index=False)
    store.put(ANA, "rome", {"title": "Trip", "body": {"text": "Ana flies to Rome."}}, index=["title", "body.text"])

    assert store.get(ANA, "cat") is not None
    assert [i.key for i in store.search(ANA, query="Ana has a cat named Mimi")] == ["rome"]
    assert {i.key for i in store.search(ANA)} == {"cat", "rome"}            # no query: a filtered listing
    assert [i.key for i in store.search(ANA, filter={"category": "Personal"})] == ["cat"]
    assert [i.key for i in store.search(ANA, query="flight to Rome")] == ["rome"]


def test_an_indexed_put_with_nothing_to_embed_is_refused(store: S3VectorsStore) -> None:
    with pytest.raises(MissingIndexFieldError, match=r"nothing to embed at \['summary'\]"):
        store.put(ANA, "x", {"text": "no summary here"})
    assert store.get(ANA, "x") is None


def test_updates_keep_created_at(store: S3VectorsStore) -> None:
    store.put(ANA, "luna", {"summary": "Ana has a dog."})
    first = store.get(ANA, "luna")
    store.put(ANA, "luna", {"summary": "Ana has a dog named Luna."})
    second = store.get(ANA, "luna")
    assert first is not None and second is not None
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert second.value == {"summary": "Ana has a dog named Luna."}


def test_search_filters_pages_and_ranks(store: S3VectorsStore) -> None:
    put_facts(store)
    store.put(("bo", "semantic"), "rex", {"summary": "Bo has a dog named Rex.", "category": "Personal"})

    everything = store.search(ANA, query="Ana's dog Luna", limit=10)
    personal = store.search(ANA, query="Ana's dog Luna", filter={"category": "Personal"}, limit=10)
    page = store.search(ANA, query="Ana's dog Luna", filter={"category": "Personal"}, limit=2, offset=1)

    assert {i.key for i in everything} == set(FACTS)                       # never Bo's
    assert {i.key for i in personal} == set(FACTS) - {"budget"}
    assert {i.key for i in personal[:2]} == {"luna", "dog-walk"}
    assert [i.score for i in personal] == sorted((i.score for i in personal), reverse=True)
    assert [i.key for i in page] == [i.key for i in personal[1:3]]
    assert store.search(ANA, query="Ana's dog Luna", filter={"category": {"$in": ["Finance"]}})[0].key == "budget"
    assert {i.key for i in store.search(("ana",), query="dog")} >= {"luna", "dog-walk"}


def test_filters_fail_closed(store: S3VectorsStore) -> None:
    with pytest.raises(UnsupportedFilterError, match="cannot filter on 'mood'"):
        store.search(ANA, query="dog", filter={"mood": "happy"})
    with pytest.raises(InvalidFilterError, match=r"category.\$like: unknown operator"):
        store.search(ANA, query="dog", filter={"category": {"$like": "Per%"}})
    with pytest.raises(ValueError, match="at most 100"):
        store.search(ANA, query="dog", limit=50, offset=60)


def test_delete(store: S3VectorsStore) -> None:
    put_facts(store)
    store.delete(ANA, "luna")
    assert store.get(ANA, "luna") is None
    assert "luna" not in {i.key for i in store.search(ANA, query="Ana has a dog named Luna.")}


def test_batch_reads_before_writes_and_the_last_put_wins(store: S3VectorsStore) -> None:
    store.put(ANA, "luna", {"summary": "Ana has a dog."})
    results = store.batch([
        GetOp(ANA, "luna"),
        PutOp(ANA, "luna", {"summary": "Ana has a dog named Luna."}),
        PutOp(ANA, "tea", {"summary": "Ana drinks tea."}),
        PutOp(ANA, "tea", None),
        SearchOp(ANA, query="dog"),
        ListNamespacesOp(),
    ])
    assert results[0].value == {"summary": "Ana has a dog."}
    assert results[1:4] == [None, None, None]
    assert [i.value for i in results[4]] == [{"summary": "Ana has a dog."}]
    assert results[5] == [ANA]
    assert store.get(ANA, "luna").value == {"summary": "Ana has a dog named Luna."}
    assert store.get(ANA, "tea") is None


async def test_async_variants(store: S3VectorsStore) -> None:
    await store.aput(ANA, "luna", {"summary": "Ana has a dog named Luna.", "category": "Personal"})
    await store.aput(("ana", "episodic"), "walk", {"summary": "On 2023-05-08 Ana walked Luna."})

    assert (await store.aget(ANA, "luna")).value["category"] == "Personal"
    assert [i.key for i in await store.asearch(ANA, query="dog Luna", filter={"category": "Personal"})] == ["luna"]
    assert await store.alist_namespaces(prefix=("ana",)) == [("ana", "episodic"), ANA]
    await store.adelete(ANA, "luna")
    assert await store.aget(ANA, "luna") is None
    (found, listed) = await store.abatch([GetOp(("ana", "episodic"), "walk"), ListNamespacesOp()])
    assert found.key == "walk" and listed == [("ana", "episodic")]


def test_list_namespaces(store: S3VectorsStore) -> None:
    for namespace in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
                      ("a", "c", "f"), ("x", "semantic")]:
        store.put(namespace, "k", {"summary": "s"}, index=False)

    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"),
                                                                     ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.batch([ListNamespacesOp((MatchCondition("prefix", ("x",)),))]) == [[("x", "semantic")]]


async def test_it_reads_what_the_sink_wrote(backend: Backend, index: str, store: S3VectorsStore) -> None:
    """Same layout both ways: memstream's memories are a LangGraph agent's store."""
    titan = EmbedderTexts(TitanV2Embedder(backend.bedrock, dimensions=DIM))
    luna, old = ("Ana has a dog named Luna.", "Ana lives in Porto.")
    documents = [memory_document("m1", luna, dimension=DIM, vector=titan.embed_texts([luna])[0], category="Personal"),
                 memory_document("m2", old, dimension=DIM, vector=titan.embed_texts([old])[0], state="superseded")]
    sink = S3VectorsDestination(backend.settings(index), client=backend.client(index))
    await sink.start()
    await sink.write([SinkRecord(key=d["id"], op="upsert", user_id="ana", document=d) for d in documents])

    item = store.get(ANA, "m1")
    assert item is not None and item.value == {k: v for k, v in documents[0].items() if k not in ("embedding_b64", "context_b64")}
    assert [i.key for i in store.search(ANA, query="Ana's dog", filter={"category": "Personal"})] == ["m1"]
    assert "m2" not in {i.key for i in store.search(ANA, query="Ana lives in Porto.")}  # superseded
    assert store.get(ANA, "m2").value["state"] == "superseded"


class Turn(TypedDict):
    question: str
    context: list[str]


def test_a_langgraph_graph_reads_memories_through_the_store(store: S3VectorsStore) -> None:
    put_facts(store)

    def recall(state: Turn, runtime: Runtime[Any]) -> dict[str, Any]:
        found = runtime.store.search(ANA, query=state["question"], filter={"category": "Personal"}, limit=2)
        return {"context": [i.value["summary"] for i in found]}

    graph = StateGraph(Turn)
    graph.add_node("recall", recall)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", END)
    answer = graph.compile(store=store).invoke({"question": "What is Ana's dog called?", "context": []})

    assert FACTS["luna"][0] in answer["context"]


def test_from_settings_opens_the_sinks_index(backend: Backend) -> None:
    if backend.name != "moto":
        pytest.skip("creates an index named by settings")
    settings = backend.settings("unused", bedrock_embed_dimensions=1024, s3vectors_bucket="sink-bucket",
                                s3vectors_index="sink-index")
    store = S3VectorsStore.from_settings(settings)  # creates the bucket and the index of the embedder (Titan, 1024 d)

    store.put(ANA, "k", {"summary": "Ana has a dog."}, index=False)  # no embedding: no Bedrock call
    assert backend.client("unused").describe_index() is None  # not the S3V_* index
    raw = backend.s3v.get_index(vectorBucketName="sink-bucket", indexName="sink-index")["index"]
    assert (raw["dimension"], raw["distanceMetric"]) == (1024, "cosine")
    assert store.get(ANA, "k").value == {"summary": "Ana has a dog."}
