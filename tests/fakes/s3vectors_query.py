"""A test double for S3 Vectors: moto for the CRUD calls, this for what moto lacks.

moto implements the bucket, index and vector CRUD calls but not QueryVectors (under `mock_aws`
that call would leave for the real endpoint), and it accepts any metadata. `InMemoryQueryVectors`
wraps a `VectorsClient` (normally `Boto3VectorsClient` under `mock_aws`), passes the CRUD calls
through, answers `query_vectors` over the wrapped index's vectors with the service's distances
and filter grammar (`sinks/s3vectors_filter.py`), and refuses the vectors the service refuses:
more than 2 KB of filterable or 40 KB of total metadata, more than 50 metadata keys, a key twice
in one write. (Per-call counts are the wrapped client's job: `Boto3VectorsClient` chunks.)
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sinks.s3vectors_client import (
    MAX_TOP_K,
    IndexInfo,
    QueryMatch,
    StoredVector,
    VectorsClient,
    VectorsNotFound,
    VectorsValidationError,
)
from sinks.s3vectors_filter import InvalidFilterError, compile_filter
from sinks.s3vectors_layout import (
    MAX_FILTERABLE_BYTES,
    MAX_METADATA_BYTES,
    MAX_METADATA_KEYS,
    filterable_part,
    metadata_bytes,
)


def distance(metric: str, a: Sequence[float], b: Sequence[float]) -> float:
    """The service's distance: cosine distance (1 - cosine similarity) or Euclidean (L2)."""
    if metric == "euclidean":
        return math.dist(a, b)
    dot = sum(x * y for x, y in zip(a, b))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - dot / norms if norms else 1.0


class InMemoryQueryVectors:
    """`VectorsClient` that answers QueryVectors itself and checks the service's write limits."""

    def __init__(self, inner: VectorsClient) -> None:
        self._inner = inner
        self.bucket = inner.bucket
        self.index = inner.index
        self._non_filterable: tuple[str, ...] | None = None

    def bucket_exists(self) -> bool:
        return self._inner.bucket_exists()

    def create_bucket(self) -> None:
        self._inner.create_bucket()

    def describe_index(self) -> IndexInfo | None:
        info = self._inner.describe_index()
        if info is None or info.non_filterable_keys is not None or self._non_filterable is None:
            return info
        # moto does not keep metadataConfiguration: report what this index was created with.
        return IndexInfo(info.dimension, info.distance, self._non_filterable)

    def create_index(self, *, dimension: int, distance: str,
                     non_filterable_keys: Sequence[str]) -> None:
        self._inner.create_index(dimension=dimension, distance=distance,
                                 non_filterable_keys=non_filterable_keys)
        self._non_filterable = tuple(non_filterable_keys)

    def put_vectors(self, vectors: Sequence[StoredVector]) -> None:
        if len({v.key for v in vectors}) != len(vectors):
            raise VectorsValidationError("PutVectors: a key appears twice in one request")
        non_filterable = self._non_filterable or ()
        for vector in vectors:
            if len(vector.metadata) > MAX_METADATA_KEYS:
                raise VectorsValidationError(f"{vector.key}: more than {MAX_METADATA_KEYS} metadata keys")
            if metadata_bytes(filterable_part(vector.metadata, non_filterable)) > MAX_FILTERABLE_BYTES:
                raise VectorsValidationError(f"{vector.key}: filterable metadata over 2 KB")
            if metadata_bytes(vector.metadata) > MAX_METADATA_BYTES:
                raise VectorsValidationError(f"{vector.key}: metadata over 40 KB")
        self._inner.put_vectors(vectors)

    def get_vectors(self, keys: Sequence[str], *, return_data: bool = False) -> list[StoredVector]:
        return self._inner.get_vectors(keys, return_data=return_data)

    def delete_vectors(self, keys: Sequence[str]) -> None:
        self._inner.delete_vectors(keys)

    def list_vectors(self, *, return_data: bool = False) -> Iterator[StoredVector]:
        return self._inner.list_vectors(return_data=return_data)

    def query_vectors(self, vector: Sequence[float], *, top_k: int,
                      filter: Mapping[str, Any] | None = None) -> list[QueryMatch]:
        info = self._inner.describe_index()
        if info is None:
            raise VectorsNotFound("s3vectors QueryVectors: NotFoundException the index does not exist")
        if not 1 <= top_k <= MAX_TOP_K:
            raise VectorsValidationError(f"QueryVectors: topK must be between 1 and {MAX_TOP_K}")
        if len(vector) != info.dimension:
            raise VectorsValidationError(f"QueryVectors: the query vector has {len(vector)} "
                                         f"dimensions; the index has {info.dimension}")
        try:
            passes = compile_filter(filter) if filter is not None else (lambda _: True)
        except InvalidFilterError as exc:
            raise VectorsValidationError(f"QueryVectors: invalid filter: {exc}") from exc
        non_filterable = set(self._non_filterable or ())
        matches = [
            QueryMatch(v.key, distance(info.distance, vector, v.data or ()), v.metadata)
            for v in self._inner.list_vectors(return_data=True)
            if passes({k: x for k, x in v.metadata.items() if k not in non_filterable})
        ]
        matches.sort(key=lambda m: m.distance)
        return matches[:top_k]
