"""The boto3 side of our S3 Vectors interface and of Titan: requests, paging, limits, errors.

A real boto3 client with botocore's Stubber (the AWS client boundary), a real closed port for
the network failure, moto for the paging of a real put.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from sinks.base import PermanentSinkError, SinkRecord, TransientSinkError
from sinks.s3vectors import S3VectorsDestination
from sinks.s3vectors_client import (
    Boto3VectorsClient,
    IndexInfo,
    StoredVector,
    VectorsError,
    VectorsNotFound,
    VectorsUnavailable,
    VectorsValidationError,
)
from sinks.s3vectors_index import ensure_index
from sinks.s3vectors_layout import memory_vector
from streams.settings import Settings
from tests.unit.sinks_s3.conftest import Backend, memory_document

WHERE = {"vectorBucketName": "bkt", "indexName": "idx"}


def s3vectors(**config: Any) -> Any:
    return boto3.client("s3vectors", region_name="us-east-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing", **config)


@pytest.fixture
def stubbed() -> Iterator[tuple[Boto3VectorsClient, Stubber]]:
    client = s3vectors()
    with Stubber(client) as stubber:
        yield Boto3VectorsClient(client, "bkt", "idx"), stubber
        stubber.assert_no_pending_responses()


def settings() -> Settings:
    return Settings(s3v_bucket="bkt", s3v_index_memory="idx", embedder="bedrock", bedrock_embed_dimensions=256)


@pytest.mark.parametrize(("code", "status", "error"), [
    ("TooManyRequestsException", 429, VectorsUnavailable),
    ("ServiceUnavailableException", 503, VectorsUnavailable),
    ("InternalServerException", 500, VectorsUnavailable),
    ("NotFoundException", 404, VectorsNotFound),
    ("ValidationException", 400, VectorsValidationError),
    ("AccessDeniedException", 403, VectorsError),
])
def test_service_errors_become_named_errors(stubbed: tuple[Boto3VectorsClient, Stubber], code: str,
                                            status: int, error: type[VectorsError]) -> None:
    client, stubber = stubbed
    stubber.add_client_error("delete_vectors", service_error_code=code, http_status_code=status)
    with pytest.raises(error, match=f"s3vectors DeleteVectors: {code}"):
        client.delete_vectors(["k1"])


@pytest.mark.parametrize(("code", "status", "raised"), [
    ("TooManyRequestsException", 429, TransientSinkError),
    ("InternalServerException", 500, TransientSinkError),
    ("AccessDeniedException", 403, PermanentSinkError),
])
async def test_the_sink_maps_them_to_retry_or_fail(stubbed: tuple[Boto3VectorsClient, Stubber], code: str,
                                                   status: int, raised: type[Exception]) -> None:
    client, stubber = stubbed
    stubber.add_client_error("put_vectors", service_error_code=code, http_status_code=status)
    document = memory_document("m1", "Ana has a dog.")
    with pytest.raises(raised):
        await S3VectorsDestination(settings(), client=client).write(
            [SinkRecord(key="m1", op="upsert", user_id="ana", document=document)])


async def test_an_unreachable_service_is_transient() -> None:
    config = Config(retries={"total_max_attempts": 1}, connect_timeout=2)
    client = Boto3VectorsClient(s3vectors(endpoint_url="http://127.0.0.1:9", config=config), "bkt", "idx")
    with pytest.raises(VectorsUnavailable, match="unreachable"):
        client.delete_vectors(["k1"])
    with pytest.raises(TransientSinkError):
        await S3VectorsDestination(settings(), client=client).start()


async def test_only_the_vectors_the_service_refuses_are_rejected(stubbed: tuple[Boto3VectorsClient, Stubber]) -> None:
    client, stubber = stubbed
    a, b = memory_document("a", "Ana has a dog."), memory_document("b", "Ana likes tea.")
    body = [{"key": v.key, "data": {"float32": v.data}, "metadata": v.metadata}
            for v in (memory_vector(a, 256), memory_vector(b, 256))]
    stubber.add_client_error("put_vectors", "ValidationException", "Invalid record", 400,
                             expected_params={**WHERE, "vectors": body})
    stubber.add_response("put_vectors", {}, {**WHERE, "vectors": body[:1]})
    stubber.add_client_error("put_vectors", "ValidationException", "Invalid record", 400,
                             expected_params={**WHERE, "vectors": body[1:]})

    rejected = await S3VectorsDestination(settings(), client=client).write(
        [SinkRecord(key=d["id"], op="upsert", user_id="ana", document=d) for d in (a, b)])

    assert [(r.record.key, r.reason) for r in rejected] == [
        ("b", "s3vectors refused the vector: s3vectors PutVectors: ValidationException Invalid record")]


def test_list_vectors_follows_next_tokens(stubbed: tuple[Boto3VectorsClient, Stubber]) -> None:
    client, stubber = stubbed
    page = {**WHERE, "maxResults": 1000, "returnData": False, "returnMetadata": True}
    stubber.add_response("list_vectors", {"vectors": [{"key": "a", "metadata": {"x": 1}}],
                                          "nextToken": "t1"}, page)
    stubber.add_response("list_vectors", {"vectors": [{"key": "b"}]}, {**page, "nextToken": "t1"})
    assert [(v.key, v.metadata) for v in client.list_vectors()] == [("a", {"x": 1}), ("b", {})]


def test_query_vectors_asks_for_metadata_and_distance(stubbed: tuple[Boto3VectorsClient, Stubber]) -> None:
    client, stubber = stubbed
    spec = {"$and": [{"ns_0": {"$eq": "ana"}}, {"is_indexed": {"$eq": True}}]}
    stubber.add_response("query_vectors", {
        "vectors": [{"key": "a", "distance": 0.25, "metadata": {"doc_key": "m1"}}],
        "distanceMetric": "cosine"},
        {**WHERE, "topK": 3, "queryVector": {"float32": [1.0, 0.0]}, "filter": spec,
         "returnMetadata": True, "returnDistance": True})
    (match,) = client.query_vectors([1.0, 0.0], top_k=3, filter=spec)
    assert (match.key, match.distance, match.metadata) == ("a", 0.25, {"doc_key": "m1"})


def test_puts_and_gets_are_split_at_the_service_limits(backend: Backend) -> None:
    index = backend.new_index()
    client = backend.client_in_bucket(index)
    client.create_index(dimension=2, distance="euclidean", non_filterable_keys=["value_json"])
    vectors = [StoredVector(f"k{i:04d}", {"i": i}, [1.0, float(i)]) for i in range(1100)]
    sent: dict[str, list[int]] = {"PutVectors": [], "GetVectors": []}

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        sent[model.name].append(len(params.get("vectors") or params.get("keys") or ()))

    # What each request carried, seen by botocore itself (neither moto nor botocore enforces it).
    backend.s3v.meta.events.register("before-parameter-build.s3vectors.PutVectors", record)
    backend.s3v.meta.events.register("before-parameter-build.s3vectors.GetVectors", record)
    keys = [v.key for v in vectors]

    client.put_vectors(vectors)
    found = client.get_vectors(keys)

    assert sent == {"PutVectors": [500, 500, 100], "GetVectors": [100] * 11}
    assert sorted(v.key for v in client.list_vectors()) == keys
    assert sorted(v.key for v in found) == keys


def test_ensure_index_tolerates_another_worker_creating_it_first(
        stubbed: tuple[Boto3VectorsClient, Stubber]) -> None:
    client, stubber = stubbed
    index = {"index": {"vectorBucketName": "bkt", "indexName": "idx", "indexArn": "arn", "dataType": "float32",
                       "dimension": 8, "distanceMetric": "cosine", "creationTime": 0,
                       "metadataConfiguration": {"nonFilterableMetadataKeys": ["value_json", "namespace"]}}}
    stubber.add_client_error("get_vector_bucket", "NotFoundException", http_status_code=404)
    stubber.add_client_error("create_vector_bucket", "ConflictException", http_status_code=409)
    stubber.add_client_error("get_index", "NotFoundException", http_status_code=404)
    stubber.add_client_error("create_index", "ConflictException", http_status_code=409,
                             expected_params={**WHERE, "dataType": "float32", "dimension": 8,
                                              "distanceMetric": "cosine", "metadataConfiguration":
                                              {"nonFilterableMetadataKeys": ["value_json", "namespace"]}})
    stubber.add_response("get_index", index, WHERE)
    assert ensure_index(client, dimension=8, distance="COSINE") == IndexInfo(8, "cosine", ("value_json", "namespace"))
