"""`S3VectorsStore`: seed 002's LangGraph store over S3 Vectors, with Bedrock Titan V2 embeddings.

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
- `search` with a query: Titan embeds it and QueryVectors answers, under the namespace prefix,
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
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError
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

from sinks.s3vectors_client import MAX_TOP_K, Boto3VectorsClient, IndexInfo, StoredVector, VectorsClient
from sinks.s3vectors_filter import compile_filter
from sinks.s3vectors_index import ensure_index, normalised_distance
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
from streams.providers.embedders import TITAN_V2_PROFILE
from streams.app.settings import Settings

TITAN_DIMENSIONS = (256, 512, 1024)
TITAN_MAX_CHARS = 50_000  # Titan Text Embeddings V2 takes up to 50,000 characters (8,192 tokens)


class EmbeddingError(RuntimeError):
    """Bedrock did not return an embedding (the message has the error code, never the text)."""


class UnsupportedFilterError(ValueError):
    """The filter names a field S3 Vectors cannot filter on in this layout."""


class MissingIndexFieldError(ValueError):
    """An indexed put found no text at its index fields."""


class TextEmbedder(Protocol):
    dimension: int

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]: ...


class TitanEmbedder:
    """Bedrock Titan Text Embeddings V2 through a boto3 `bedrock-runtime` client's `invoke_model`,
    one call per text (the model takes a single `inputText`), normalised vectors."""

    def __init__(self, client: Any, *, model_id: str = TITAN_V2_PROFILE.name,
                 dimension: int = TITAN_V2_PROFILE.dim) -> None:
        if dimension not in TITAN_DIMENSIONS:
            raise ValueError(f"Titan V2 embeds in {TITAN_DIMENSIONS} dimensions, not {dimension}")
        self._client = client
        self.model_id = model_id
        self.dimension = dimension

    @classmethod
    def create(cls, *, region: str, model_id: str = TITAN_V2_PROFILE.name,
               dimension: int = TITAN_V2_PROFILE.dim, timeout_s: float = 10.0,
               attempts: int = 3) -> TitanEmbedder:
        """A client from the default AWS credential chain, botocore's standard retries."""
        import boto3
        from botocore.config import Config

        config = Config(retries={"total_max_attempts": attempts, "mode": "standard"},
                        connect_timeout=timeout_s, read_timeout=timeout_s)
        client = boto3.client("bedrock-runtime", region_name=region, config=config)
        return cls(client, model_id=model_id, dimension=dimension)

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def _embed(self, text: str) -> list[float]:
        body = json.dumps({"inputText": text[:TITAN_MAX_CHARS], "dimensions": self.dimension,
                           "normalize": True})
        try:
            response = self._client.invoke_model(modelId=self.model_id, body=body,
                                                 contentType="application/json",
                                                 accept="application/json")
            payload = json.loads(response["body"].read())
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "error")
            raise EmbeddingError(f"bedrock {self.model_id}: {code}") from exc
        except BotoCoreError as exc:
            raise EmbeddingError(f"bedrock {self.model_id}: {type(exc).__name__}") from exc
        except (KeyError, TypeError, ValueError):
            raise EmbeddingError(f"bedrock {self.model_id}: the answer is not JSON") from None
        embedding = payload.get("embedding") if isinstance(payload, dict) else None
        if (not isinstance(embedding, list) or len(embedding) != self.dimension
                or not all(isinstance(x, (int, float)) for x in embedding)):
            raise EmbeddingError(f"bedrock {self.model_id}: no embedding of {self.dimension} numbers")
        return [float(x) for x in embedding]


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
                     index_name: str, *, dims: int = 1024, model_id: str = TITAN_V2_PROFILE.name,
                     distance: str = "COSINE", default_index_fields: Sequence[str] = ("summary",),
                     ensure: bool = True) -> S3VectorsStore:
        """Seed 002's constructor: boto3 `s3vectors` and `bedrock-runtime` clients. With `ensure`,
        creates the bucket and index if absent and validates dimension and distance."""
        store = cls(Boto3VectorsClient(s3v_client, vector_bucket_name, index_name),
                    TitanEmbedder(bedrock_client, model_id=model_id, dimension=dims),
                    distance=distance, default_index_fields=default_index_fields)
        if ensure:
            store.setup()
        return store

    @classmethod
    def from_settings(cls, settings: Settings, *, ensure: bool = True) -> S3VectorsStore:
        """The store on the sink's index (S3VECTORS_BUCKET / S3VECTORS_INDEX when set, else S3V_*;
        AWS_REGION, BEDROCK_EMBED_MODEL_ID)."""
        store = cls(
            Boto3VectorsClient.create(region=settings.aws_region,
                                      bucket=settings.s3vectors_bucket or settings.s3v_bucket,
                                      index=settings.s3vectors_index or settings.s3v_index_memory),
            TitanEmbedder.create(region=settings.aws_region, model_id=settings.bedrock_embed_model_id,
                                 dimension=settings.s3v_dimension or TITAN_V2_PROFILE.dim),
            distance=settings.s3v_distance,
        )
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

