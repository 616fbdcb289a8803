"""Create the vector bucket and index when absent, and check an existing index fits us.

The sink and the LangGraph store both call `ensure_index` before their first write: an index
with another dimension or distance would refuse every vector (or rank them by the wrong
measure), and one where `value_json` is filterable would refuse every document over 2 KB. Such
an index is reported with what to change, never silently used.
"""
from __future__ import annotations

from streams.errors import MemstreamError
from sinks.s3vectors_client import DISTANCES, IndexInfo, VectorsClient, VectorsConflict
from sinks.s3vectors_layout import NON_FILTERABLE_KEYS


class IndexMismatchError(MemstreamError):
    """The existing index does not fit this configuration; the message says what differs."""


def normalised_distance(distance: str) -> str:
    """`cosine` / `euclidean` from any spelling (seed 002 writes COSINE)."""
    metric = distance.strip().lower()
    if metric not in DISTANCES:
        raise IndexMismatchError(f"S3V_DISTANCE must be one of {', '.join(DISTANCES)}, not {distance!r}")
    return metric


def ensure_index(client: VectorsClient, *, dimension: int, distance: str) -> IndexInfo:
    """Create what is missing and return the index's settings; raise IndexMismatchError when an
    existing index differs. Safe when several workers race to create the same index."""
    metric = normalised_distance(distance)
    if not client.bucket_exists():
        try:
            client.create_bucket()
        except VectorsConflict:
            pass
    info = client.describe_index()
    if info is None:
        try:
            client.create_index(dimension=dimension, distance=metric,
                                non_filterable_keys=NON_FILTERABLE_KEYS)
        except VectorsConflict:
            pass
        info = client.describe_index()
        if info is None:
            raise IndexMismatchError(f"index {client.bucket}/{client.index} was created but cannot be read")
    where = f"S3 Vectors index {client.bucket}/{client.index}"
    if info.dimension != dimension:
        raise IndexMismatchError(
            f"{where} has dimension {info.dimension}, but the embeddings have {dimension}: "
            f"use another index (S3V_INDEX_MEMORY / S3VECTORS_INDEX) or set EMBEDDER / "
            f"BEDROCK_EMBED_DIMENSIONS to the embedder the index was made with")
    if info.distance != metric:
        raise IndexMismatchError(
            f"{where} measures {info.distance} distance, but S3V_DISTANCE is {metric}")
    reported = info.non_filterable_keys  # None: the service did not say
    missing = [k for k in NON_FILTERABLE_KEYS if reported is not None and k not in reported]
    if missing:
        raise IndexMismatchError(
            f"{where} was created without {', '.join(missing)} as non-filterable metadata; "
            f"documents over 2 KB would be refused: create a new index")
    return info
