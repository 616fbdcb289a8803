"""The QueryVectors fake: the service's distances, ordering, top-K and filter refusals, over moto."""
from __future__ import annotations

import math

import pytest

from sinks.s3vectors_client import StoredVector, VectorsClient, VectorsValidationError
from tests.unit.sinks_s3.conftest import Backend


def index_of(backend: Backend, distance: str) -> VectorsClient:
    if backend.name != "moto":
        pytest.skip("the fake itself")
    client = backend.client_in_bucket(backend.new_index())
    client.create_index(dimension=2, distance=distance, non_filterable_keys=["value_json"])
    client.put_vectors([
        StoredVector("east", {"side": "east", "n": 1, "value_json": "{}"}, [1.0, 0.0]),
        StoredVector("north", {"side": "north", "n": 2}, [0.0, 2.0]),
        StoredVector("north-east", {"side": "east", "n": 3}, [1.0, 1.0]),
    ])
    return client


def test_cosine_distance_and_order(backend: Backend) -> None:
    client = index_of(backend, "cosine")
    matches = client.query_vectors([1.0, 0.0], top_k=3)
    assert [m.key for m in matches] == ["east", "north-east", "north"]
    assert [m.distance for m in matches] == pytest.approx([0.0, 1 - math.sqrt(0.5), 1.0])
    assert [m.key for m in client.query_vectors([1.0, 0.0], top_k=1)] == ["east"]


def test_euclidean_distance(backend: Backend) -> None:
    client = index_of(backend, "euclidean")
    matches = client.query_vectors([0.0, 0.0], top_k=3)
    assert [(m.key, m.distance) for m in matches] == [("east", 1.0), ("north-east", pytest.approx(math.sqrt(2))),
                                                      ("north", 2.0)]


def test_filters_see_only_filterable_metadata(backend: Backend) -> None:
    client = index_of(backend, "cosine")
    assert [m.key for m in client.query_vectors([1.0, 0.0], top_k=3, filter={"side": "east", "n": {"$gt": 1}})] == [
        "north-east"]
    assert client.query_vectors([1.0, 0.0], top_k=3, filter={"value_json": {"$exists": True}}) == []


@pytest.mark.parametrize(("vector", "top_k", "spec", "message"), [
    ([1.0, 0.0], 0, None, "topK must be between 1 and 100"),
    ([1.0, 0.0], 101, None, "topK must be between 1 and 100"),
    ([1.0, 0.0, 0.0], 3, None, "the query vector has 3 dimensions; the index has 2"),
    ([1.0, 0.0], 3, {"n": {"$gt": "1"}}, r"invalid filter: n.\$gt: expected a number"),
])
def test_invalid_queries_are_refused(backend: Backend, vector: list[float], top_k: int, spec: dict | None,
                                     message: str) -> None:
    client = index_of(backend, "cosine")
    with pytest.raises(VectorsValidationError, match=message):
        client.query_vectors(vector, top_k=top_k, filter=spec)
