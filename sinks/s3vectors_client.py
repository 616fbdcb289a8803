"""Our interface over the S3 Vectors calls memstream uses, and its boto3 implementation.

Callers (the sink, the LangGraph store) see `VectorsClient` and the named errors below, never
botocore: tests put the fake of `tests/fakes/s3vectors_query.py` behind the same interface (moto has no

QueryVectors), and the service's per-call limits are applied here once, by chunking.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError, ConnectionError as BotoConnectionError
from botocore.exceptions import HTTPClientError, NoCredentialsError

from streams.errors import MemstreamError

# Service limits ("S3 Vectors limitations and restrictions").
MAX_PUT_VECTORS = 500
MAX_DELETE_KEYS = 500
MAX_GET_KEYS = 100
MAX_TOP_K = 100
MAX_LIST_PAGE = 1000
# Request payloads are limited to 20 MiB; a put chunk stops well before that.
MAX_PUT_PAYLOAD_BYTES = 16 * 1024 * 1024

DISTANCES = ("cosine", "euclidean")

_THROTTLED = {"TooManyRequestsException", "ThrottlingException", "SlowDown"}
_SERVER = {"ServiceUnavailableException", "InternalServerException", "RequestTimeoutException"}


class VectorsError(MemstreamError):
    """An S3 Vectors call failed for good (access denied, quota, KMS, ...)."""


class VectorsUnavailable(VectorsError):
    """Throttled, a 5xx, a timeout or no connection: worth retrying later."""


class VectorsNotFound(VectorsError):
    """The bucket or the index does not exist."""


class VectorsConflict(VectorsError):
    """The bucket or index already exists (another worker created it first)."""


class VectorsValidationError(VectorsError):
    """The service refused the request as invalid (bad filter, metadata too large, dimension)."""


@dataclass(frozen=True)
class IndexInfo:
    """What the sink and the store validate at start. `non_filterable_keys` is None when the
    service did not report them."""

    dimension: int
    distance: str
    non_filterable_keys: tuple[str, ...] | None = None


@dataclass(frozen=True)
class StoredVector:
    """One vector as written or read: `data` is None when it was not asked for."""

    key: str
    metadata: dict[str, Any] = field(default_factory=dict)
    data: list[float] | None = None


@dataclass(frozen=True)
class QueryMatch:
    """One QueryVectors result: the distance as the index measures it (cosine: 1 - cos)."""

    key: str
    distance: float
    metadata: dict[str, Any]


class VectorsClient(Protocol):
    """The S3 Vectors calls on one index of one vector bucket."""

    bucket: str
    index: str

    def bucket_exists(self) -> bool: ...

    def create_bucket(self) -> None: ...

    def describe_index(self) -> IndexInfo | None:
        """The index's settings, or None when it does not exist."""
        ...

    def create_index(self, *, dimension: int, distance: str,
                     non_filterable_keys: Sequence[str]) -> None: ...

    def put_vectors(self, vectors: Sequence[StoredVector]) -> None: ...

    def get_vectors(self, keys: Sequence[str], *, return_data: bool = False) -> list[StoredVector]:
        """The vectors that exist among `keys` (missing keys are left out), with metadata."""
        ...

    def delete_vectors(self, keys: Sequence[str]) -> None: ...

    def list_vectors(self, *, return_data: bool = False) -> Iterator[StoredVector]:
        """Every vector of the index with its metadata, page after page."""
        ...

    def query_vectors(self, vector: Sequence[float], *, top_k: int,
                      filter: Mapping[str, Any] | None = None) -> list[QueryMatch]:
        """The `top_k` nearest vectors passing `filter`, nearest first, with metadata."""
        ...


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """`items` in consecutive slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def put_chunks(vectors: Sequence[StoredVector]) -> Iterator[list[StoredVector]]:
    """PutVectors calls within the per-call vector count and (estimated) payload size."""
    chunk: list[StoredVector] = []
    size = 0
    for vector in vectors:
        estimate = len(json.dumps(vector.metadata, ensure_ascii=False)) + 24 * len(vector.data or ())
        if chunk and (len(chunk) == MAX_PUT_VECTORS or size + estimate > MAX_PUT_PAYLOAD_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(vector)
        size += estimate
    if chunk:
        yield chunk


def translated_error(exc: Exception) -> VectorsError:
    """The named error of anything boto3 raises on an S3 Vectors call. Messages carry the error
    code and the service's own text, never request content."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = error.get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        text = f"s3vectors {exc.operation_name}: {code or status} {error.get('Message', '')}".strip()
        if code in _THROTTLED or code in _SERVER or status == 429 or status >= 500:
            return VectorsUnavailable(text)
        if code == "NotFoundException":
            return VectorsNotFound(text)
        if code == "ConflictException":
            return VectorsConflict(text)
        if code == "ValidationException":
            return VectorsValidationError(text)
        return VectorsError(text)
    if isinstance(exc, (BotoConnectionError, HTTPClientError)):
        return VectorsUnavailable(f"s3vectors unreachable: {type(exc).__name__}")
    if isinstance(exc, NoCredentialsError):
        return VectorsError("s3vectors: no AWS credentials")
    return VectorsError(f"s3vectors: {type(exc).__name__}")


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except (ClientError, BotoCoreError) as exc:
        raise translated_error(exc) from exc


class Boto3VectorsClient:
    """`VectorsClient` over a boto3 `s3vectors` client (thread-safe; calls are blocking)."""

    def __init__(self, client: Any, bucket: str, index: str) -> None:
        self._client = client
        self.bucket = bucket
        self.index = index
        self._where = {"vectorBucketName": bucket, "indexName": index}

    @classmethod
    def create(cls, *, region: str, bucket: str, index: str, timeout_s: float = 10.0,
               attempts: int = 3) -> Boto3VectorsClient:
        """A client from the default AWS credential chain. botocore's standard retry mode retries
        throttling and 5xx a few times; what still fails reaches the caller as VectorsUnavailable."""
        import boto3
        from botocore.config import Config

        config = Config(retries={"total_max_attempts": attempts, "mode": "standard"},
                        connect_timeout=timeout_s, read_timeout=timeout_s)
        return cls(boto3.client("s3vectors", region_name=region, config=config), bucket, index)

    def bucket_exists(self) -> bool:
        try:
            with _translated():
                self._client.get_vector_bucket(vectorBucketName=self.bucket)
        except VectorsNotFound:
            return False
        return True

    def create_bucket(self) -> None:
        with _translated():
            self._client.create_vector_bucket(vectorBucketName=self.bucket)

    def describe_index(self) -> IndexInfo | None:
        try:
            with _translated():
                index = self._client.get_index(**self._where)["index"]
        except VectorsNotFound:
            return None
        config = index.get("metadataConfiguration")
        keys = tuple(config.get("nonFilterableMetadataKeys", ())) if config is not None else None
        return IndexInfo(int(index["dimension"]), str(index["distanceMetric"]).lower(), keys)

    def create_index(self, *, dimension: int, distance: str,
                     non_filterable_keys: Sequence[str]) -> None:
        with _translated():
            self._client.create_index(
                **self._where, dataType="float32", dimension=dimension, distanceMetric=distance,
                metadataConfiguration={"nonFilterableMetadataKeys": list(non_filterable_keys)},
            )

    def put_vectors(self, vectors: Sequence[StoredVector]) -> None:
        for chunk in put_chunks(vectors):
            body = [{"key": v.key, "data": {"float32": list(v.data or ())}, "metadata": v.metadata}
                    for v in chunk]
            with _translated():
                self._client.put_vectors(**self._where, vectors=body)

    def get_vectors(self, keys: Sequence[str], *, return_data: bool = False) -> list[StoredVector]:
        found: list[StoredVector] = []
        for chunk in chunks(list(keys), MAX_GET_KEYS):
            with _translated():
                answer = self._client.get_vectors(**self._where, keys=list(chunk),
                                                  returnData=return_data, returnMetadata=True)
            found.extend(_stored(v) for v in answer.get("vectors", ()))
        return found

    def delete_vectors(self, keys: Sequence[str]) -> None:
        for chunk in chunks(list(keys), MAX_DELETE_KEYS):
            with _translated():
                self._client.delete_vectors(**self._where, keys=list(chunk))

    def list_vectors(self, *, return_data: bool = False) -> Iterator[StoredVector]:
        token: str | None = None
        while True:
            page: dict[str, Any] = {"maxResults": MAX_LIST_PAGE, "returnData": return_data,
                                    "returnMetadata": True}
            if token:
                page["nextToken"] = token
            with _translated():
                answer = self._client.list_vectors(**self._where, **page)
            yield from (_stored(v) for v in answer.get("vectors", ()))
            token = answer.get("nextToken")
            if not token:
                return

    def query_vectors(self, vector: Sequence[float], *, top_k: int,
                      filter: Mapping[str, Any] | None = None) -> list[QueryMatch]:
        request: dict[str, Any] = {"topK": top_k, "queryVector": {"float32": list(vector)},
                                   "returnMetadata": True, "returnDistance": True}
        if filter is not None:
            request["filter"] = dict(filter)
        with _translated():
            answer = self._client.query_vectors(**self._where, **request)
        return [QueryMatch(v["key"], float(v.get("distance", 0.0)), dict(v.get("metadata") or {}))
                for v in answer.get("vectors", ())]


def _stored(vector: Mapping[str, Any]) -> StoredVector:
    data = vector.get("data")
    return StoredVector(
        key=vector["key"], metadata=dict(vector.get("metadata") or {}),
        data=[float(x) for x in data["float32"]] if data else None,
    )
