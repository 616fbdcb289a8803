"""The S3 Vectors sink: memories into one index of all users, in seed 002's layout.

`S3VectorsDestination` implements `sinks.base.Destination`. `start` creates the bucket and the
index when absent and checks an existing index's dimension (the embedder's, `index_dimension`),
distance and non-filterable keys. A memory whose embedding has another dimension is rejected.
`write` lays every record out (`sinks/s3vectors_layout.py`), keeps the last operation per vector
key (a batch may upsert then delete one memory), and sends the puts and deletes in calls within
the service's limits. Throttling, 5xx and network errors raise TransientSinkError (the runner
retries the batch; puts and deletes by deterministic key make the retry harmless); a record the
layout or the service refuses comes back as Rejected; a missing index, denied access or a
mismatched index raises PermanentSinkError.
"""
from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from sinks.base import PermanentSinkError, Rejected, SinkRecord, TransientSinkError
from sinks.s3vectors_client import (
    Boto3VectorsClient,
    StoredVector,
    VectorsClient,
    VectorsError,
    VectorsUnavailable,
    VectorsValidationError,
)
from sinks.s3vectors_index import IndexMismatchError, ensure_index
from sinks.s3vectors_layout import LayoutError, memory_delete_keys, memory_vector
from streams.settings import Settings
from streams.providers.embedders import EmbedderError
from streams.providers.embedders.configured import embedder_profile

log = logging.getLogger(__name__)
T = TypeVar("T")


def index_dimension(settings: Settings) -> int:
    """The index dimension: always the configured embedder's (EMBEDDER, and for bedrock
    BEDROCK_EMBED_DIMENSIONS), the dimension of the vectors the worker writes."""
    try:
        return embedder_profile(settings).dim
    except EmbedderError as exc:
        raise PermanentSinkError(str(exc)) from None


class S3VectorsDestination:
    """Memories to S3 Vectors (see the module docstring)."""

    name = "s3vectors"

    def __init__(self, settings: Settings, client: VectorsClient | None = None) -> None:
        self._settings = settings
        self._dimension = index_dimension(settings)
        self._client = client or Boto3VectorsClient.create(
            region=settings.aws.aws_region, bucket=settings.sinks.s3v_bucket, index=settings.sinks.s3v_index_memory)

    async def start(self) -> None:
        try:
            info = await self._call(lambda: ensure_index(
                self._client, dimension=self._dimension, distance=self._settings.sinks.s3v_distance))
        except IndexMismatchError as exc:
            raise PermanentSinkError(str(exc)) from exc
        log.info("s3vectors sink ready: %s/%s, %d dimensions, %s", self._client.bucket,
                 self._client.index, info.dimension, info.distance)

    async def write(self, batch: Sequence[SinkRecord]) -> list[Rejected]:
        rejected: list[Rejected] = []
        final: dict[str, tuple[SinkRecord, StoredVector | None]] = {}  # vector key -> last op
        for record in batch:
            try:
                for key, vector in self._laid_out(record):
                    final.pop(key, None)  # re-insert: the dict keeps the order of last writes
                    final[key] = (record, vector)
            except LayoutError as exc:
                rejected.append(Rejected(record, f"s3vectors layout: {exc}"))
        puts = [(record, vector) for record, vector in final.values() if vector is not None]
        deletes = [key for key, (_, vector) in final.items() if vector is None]
        if deletes:
            await self._call(functools.partial(self._client.delete_vectors, deletes))
        if puts:
            rejected.extend(await self._put(puts))
        return rejected

    async def close(self) -> None:
        """boto3 clients hold no resources that need releasing."""

    def _laid_out(self, record: SinkRecord) -> list[tuple[str, StoredVector | None]]:
        """(vector key, vector) pairs of one record; the vector is None for a delete."""
        document = record.document or {}
        if record.op == "delete":
            doc_key = str(document.get("id") or record.key)
            return [(key, None) for key in
                    memory_delete_keys(record.user_id, doc_key, document.get("type"))]
        if document.get("user_id") != record.user_id:
            raise LayoutError("the document's user_id is not the record's")
        vector = memory_vector(document, self._dimension)
        return [(vector.key, vector)]

    async def _put(self, puts: list[tuple[SinkRecord, StoredVector]]) -> list[Rejected]:
        """Put all; when the service refuses the request as invalid, put one by one so only the
        records it refuses are rejected."""
        try:
            await self._call(functools.partial(self._client.put_vectors, [v for _, v in puts]),
                             refusable=True)
            return []
        except VectorsValidationError as exc:
            if len(puts) == 1:
                return [Rejected(puts[0][0], f"s3vectors refused the vector: {exc}")]
        rejected: list[Rejected] = []
        for record, vector in puts:
            try:
                await self._call(functools.partial(self._client.put_vectors, [vector]), refusable=True)
            except VectorsValidationError as exc:
                rejected.append(Rejected(record, f"s3vectors refused the vector: {exc}"))
        return rejected

    async def _call(self, call: Callable[[], T], *, refusable: bool = False) -> T:
        """Run a blocking client call off the event loop, with the sink's error contract. With
        `refusable`, a request the service refuses as invalid raises VectorsValidationError for
        the caller to reject records; otherwise that too is a PermanentSinkError."""
        try:
            return await asyncio.to_thread(call)
        except VectorsUnavailable as exc:
            raise TransientSinkError(str(exc)) from exc
        except VectorsValidationError as exc:
            if refusable:
                raise
            raise PermanentSinkError(str(exc)) from exc
        except VectorsError as exc:
            raise PermanentSinkError(str(exc)) from exc

