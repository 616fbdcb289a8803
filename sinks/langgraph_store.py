"""`S3VectorsStore`: seed 002's LangGraph store over S3 Vectors, with the worker's embeddings.

Queries are embedded by the embedder the settings name (`EMBEDDER`: Bedrock Titan V2 in
production, seed 002's; a local MiniLM kind in development), the one that embedded the memories,
and the index has its dimension: `from_settings` and the sink take both from
`embedder_profile(settings)`.

It reads and writes the layout of `sinks/s3vectors_layout.py`, the one the S3 Vectors sink
writes memories in, so a LangGraph agent can `search((user_id, "semantic"), query=...)` the
memories memstream produced, and `get` one by its id.

Every operation goes through `batch` (LangGraph's op vocabulary); the sync and async methods of
`BaseStore` are thin wrappers over it, and `abatch` runs `batch` on a thread. Within one batch
the reads see the store as it was before the batch's writes, and of several writes to one item
the last one wins.

- `put`: `index=None` embeds the store's default fields (seed 002: `["summary"]`), a list embeds
  those fields (LangGraph path syntax), `False` stores the item without an embedding (found by
  `get` and by filter-only `search`, never by a query). An indexed put with nothing to embed is
  an error. `created_at` survives updates.
- `search` with a query: the embedder embeds it and QueryVectors answers, under the namespace prefix,
  for indexed items only, with the filter; `score` is the similarity (cosine: 1 - distance;
  Euclidean: 1 / (1 + distance)). `offset + limit` is at most 100, the service's top-K limit.
- `search` without a query, and `list_namespaces`: S3 Vectors cannot list by filter, so these
  read the whole index (ListVectors) and filter here with the same grammar. Fine for an index
  of a few hundred thousand items; beyond that, prefer queries.
- Filters name value fields the layout flattens into filterable metadata (`FLATTENED_FIELDS`),
  with S3 Vectors operators (`$eq $ne $gt $gte $lt $lte $in $nin $exists`); any other field is
  refused (UnsupportedFilterError) rather than silently ignored. Long `summary` and `tags`
  values are cut in the filterable copy (see the layout), so filter on short fields.
- TTL is not supported.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Protocol

from langgraph.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path

from streams.errors import MemstreamError
from sinks.s3vectors_client import MAX_TOP_K, Boto3VectorsClient, IndexInfo, StoredVector, VectorsClient
from sinks.s3vectors_filter import compile_filter
from sinks.s3vectors_index import IndexMismatchError, ensure_index, normalised_distance
from sinks.s3vectors_layout import (
    FLATTENED_FIELDS,
    build_metadata,
    filterable_part,
    item_of,
    namespace_conditions,
    namespace_of,
    placeholder_vector,
    search_item_of,
    vector_key,
)
from streams.settings import Settings
from streams.providers.embedders import TITAN_V2_PROFILE, Embedder
from streams.providers.embedders.configured import build_embedder, embedder_profile
from streams.providers.embedders.titan import TitanV2Embedder

class UnsupportedFilterError(MemstreamError, ValueError):
    """The filter names a field S3 Vectors cannot filter on in this layout."""


class MissingIndexFieldError(MemstreamError, ValueError):
    """An indexed put found no text at its index fields."""


class TextEmbedder(Protocol):
    dimension: int

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]: ...


class EmbedderTexts:
    """A memstream `Embedder` (the worker's: Titan V2 for `bedrock`, MiniLM for the local kinds)
    as the store's `TextEmbedder`, so the store's query vectors come from the model that embedded
    the memories."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.dimension = embedder.profile.dim

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embedder.embed(list(texts)).astype(float).tolist()


class S3VectorsStore(BaseStore):
    """The LangGraph store of seed 002 (see the module docstring)."""

    supports_ttl = False

    def __init__(self, vectors: VectorsClient, embedder: TextEmbedder, *,
                 distance: str = "cosine", default_index_fields: Sequence[str] = ("summary",),
                 filterable_fields: Sequence[str] = FLATTENED_FIELDS) -> None:
        self._vectors = vectors
        self._embedder = embedder
        self.distance = normalised_distance(distance)
        self.dims = embedder.dimension
        self.default_index_fields = list(default_index_fields)
        self._filterable = tuple(filterable_fields)

    @classmethod
    def from_clients(cls, s3v_client: Any, bedrock_client: Any, vector_bucket_name: str,
                     index_name: str, *, dims: int = TITAN_V2_PROFILE.dim,
                     model_id: str = TITAN_V2_PROFILE.name, distance: str = "COSINE",
                     default_index_fields: Sequence[str] = ("summary",),
                     ensure: bool = True) -> S3VectorsStore:
        """Seed 002's constructor: boto3 `s3vectors` and `bedrock-runtime` clients, Titan V2 at
        `dims` (256, 512 or 1024). With `ensure`, creates the bucket and index if absent and
        validates dimension and distance."""
        titan = TitanV2Embedder(bedrock_client, model_id=model_id, dimensions=dims)
        store = cls(Boto3VectorsClient(s3v_client, vector_bucket_name, index_name), EmbedderTexts(titan),
                    distance=distance, default_index_fields=default_index_fields)
        if ensure:
            store.setup()
        return store

    @classmethod
    def from_settings(cls, settings: Settings, *, ensure: bool = True,
                      vectors: VectorsClient | None = None,
                      embedder: Embedder | None = None) -> S3VectorsStore:
        """The store on the sink's index (S3VECTORS_BUCKET / S3VECTORS_INDEX when set, else S3V_*;
        AWS_REGION), embedding queries with the worker's embedder (EMBEDDER; for bedrock the
        BEDROCK_EMBED_* settings), so its dimension is the sink's. `vectors` / `embedder` replace
        the clients the settings would make (tests; an embedder already loaded). An index of
        another dimension raises IndexMismatchError (with `ensure`)."""
        profile = embedder_profile(settings)
        if embedder is None:
            embedder = build_embedder(settings, settings.embedding.embedder_cache_dir or settings.kafka.data_dir / "models")
        if embedder.profile.dim != profile.dim:
            raise IndexMismatchError(f"the embedder has {embedder.profile.dim} dimensions; "
                                     f"EMBEDDER={settings.embedding.embedder} embeds in {profile.dim}")
        if vectors is None:
            vectors = Boto3VectorsClient.create(
                region=settings.aws.aws_region, bucket=settings.sinks.s3vectors_bucket or settings.sinks.s3v_bucket,
                index=settings.sinks.s3vectors_index or settings.sinks.s3v_index_memory)
        store = cls(vectors, EmbedderTexts(embedder), distance=settings.sinks.s3v_distance)
        if ensure:
            store.setup()
        return store

    def setup(self) -> IndexInfo:
        """Create the bucket and index when absent; IndexMismatchError when they do not fit."""
        return ensure_index(self._vectors, dimension=self.dims, distance=self.distance)

    # --- the one entry point -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        scan = _Scan(self._vectors)
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        puts = [op for op in ops if isinstance(op, PutOp)]
        writes = self._prepared_puts(puts)  # validates every put before anything is read or written
        if gets:
            found = self._fetch([vector_key(op.namespace, op.key) for _, op in gets])
            for i, op in gets:
                vector = found.get(vector_key(op.namespace, op.key))
                results[i] = item_of(vector.metadata) if vector else None
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                results[i] = self._search(op, scan)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op, scan)
        self._apply(writes)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # --- reads ---------------------------------------------------------------------------------

    def _fetch(self, keys: Sequence[str]) -> dict[str, StoredVector]:
        unique = list(dict.fromkeys(keys))
        return {v.key: v for v in self._vectors.get_vectors(unique)} if unique else {}

    def _search(self, op: SearchOp, scan: _Scan) -> list[SearchItem]:
        if op.limit < 1 or op.offset < 0:
            raise ValueError("search needs limit >= 1 and offset >= 0")
        if op.query:
            spec = self._filter(op.namespace_prefix, op.filter, indexed_only=True)
            compile_filter(spec)  # a clear InvalidFilterError before any call
            top_k = op.offset + op.limit
            if top_k > MAX_TOP_K:
                raise ValueError(f"offset + limit is at most {MAX_TOP_K} (S3 Vectors top-K)")
            (query,) = self._embedder.embed_texts([op.query])
            matches = self._vectors.query_vectors(query, top_k=top_k, filter=spec)
            return [search_item_of(m.metadata, self._similarity(m.distance))
                    for m in matches[op.offset:top_k]]
        spec = self._filter(op.namespace_prefix, op.filter, indexed_only=False)
        passes = compile_filter(spec) if spec else (lambda _: True)
        found = [v.metadata for v in scan.vectors() if passes(filterable_part(v.metadata))]
        found.sort(key=lambda m: (str(m.get("updated_at", "")), str(m.get("doc_key"))), reverse=True)
        return [search_item_of(m, None) for m in found[op.offset:op.offset + op.limit]]

    def _filter(self, prefix: Sequence[str], user_filter: Mapping[str, Any] | None, *,
                indexed_only: bool) -> dict[str, Any] | None:
        """One S3 Vectors filter: the namespace prefix, is_indexed, the caller's filter."""
        conditions = namespace_conditions(prefix)
        if indexed_only:
            conditions.append({"is_indexed": {"$eq": True}})
        for name, condition in (user_filter or {}).items():
            if name not in self._filterable:
                raise UnsupportedFilterError(
                    f"cannot filter on {name!r}; filterable fields: {', '.join(self._filterable)}")
            conditions.append({name: condition})
        if not conditions:
            return None
        return conditions[0] if len(conditions) == 1 else {"$and": conditions}

    def _similarity(self, distance: float) -> float:
        return 1.0 - distance if self.distance == "cosine" else 1.0 / (1.0 + distance)

    def _list_namespaces(self, op: ListNamespacesOp, scan: _Scan) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for vector in scan.vectors():
            namespace = namespace_of(vector.metadata)
            if all(_matches(c, namespace) for c in op.match_conditions or ()):
                found.add(namespace[:op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset:op.offset + op.limit]

    # --- writes --------------------------------------------------------------------------------

    def _prepared_puts(self, puts: Sequence[PutOp]) -> list[tuple[PutOp, str, str | None]]:
        """(op, vector key, text to embed) of the last put per item, checked."""
        last: dict[str, PutOp] = {}
        for op in puts:
            last[vector_key(op.namespace, op.key)] = op
        prepared = []
        for key, op in last.items():
            text = None
            if op.value is not None and op.index is not False:
                fields = self.default_index_fields if op.index is None else op.index
                texts = [t for f in fields for t in get_text_at_path(op.value, f) if t.strip()]
                if not texts:
                    raise MissingIndexFieldError(
                        f"nothing to embed at {list(fields)} for key {op.key!r}; "
                        f"pass index=False to store it without an embedding")
                text = "\n".join(texts)
            prepared.append((op, key, text))
        return prepared

    def _apply(self, writes: Sequence[tuple[PutOp, str, str | None]]) -> None:
        deletes = [key for op, key, _ in writes if op.value is None]
        upserts = [(op, key, text) for op, key, text in writes if op.value is not None]
        if deletes:
            self._vectors.delete_vectors(deletes)
        if not upserts:
            return
        existing = self._fetch([key for _, key, _ in upserts])
        to_embed = [text for _, _, text in upserts if text is not None]
        embeddings = iter(self._embedder.embed_texts(to_embed) if to_embed else [])
        now = datetime.now(timezone.utc).isoformat()
        vectors = []
        for op, key, text in upserts:
            before = existing.get(key)
            created_at = str(before.metadata.get("created_at", now)) if before else now
            metadata = build_metadata(op.namespace, op.key, dict(op.value or {}),
                                      created_at=created_at, updated_at=now,
                                      is_indexed=text is not None)
            data = next(embeddings) if text is not None else placeholder_vector(self.dims)
            vectors.append(StoredVector(key, metadata, data))
        self._vectors.put_vectors(vectors)


class _Scan:
    """The whole index read once per batch, on first use (filter-only search, list_namespaces)."""

    def __init__(self, vectors: VectorsClient) -> None:
        self._client = vectors
        self._vectors: list[StoredVector] | None = None

    def vectors(self) -> Iterator[StoredVector]:
        if self._vectors is None:
            self._vectors = list(self._client.list_vectors())
        return iter(self._vectors)


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's prefix/suffix match, with "*" matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == label for p, label in zip(path, labels))

