"""Seed 002's S3 Vectors layout as pure functions, shared by the sink and the LangGraph store.

One index holds every user. An item lives at a namespace (a tuple of labels; a memory's is
`(user_id, type)`) under a logical key (`doc_key`; a memory's id). Its vector's key is
`uuid5(NAMESPACE_URL, "ns_0|ns_1|...::doc_key")`, so a rewrite replaces it and a delete finds it.

Metadata of one vector:

- filterable, always: `ns_0`, `ns_1`, ... (one per namespace level), `ns_depth`, `doc_key`,
  `created_at`, `updated_at` (ISO 8601), `is_indexed` (searchable: a real embedding, and for a
  memory, state "active");
- filterable, flattened from the value when present, in this order of priority:
  `FLATTENED_FIELDS`. The service takes at most 2 KB of filterable metadata per vector, so they
  are added in that order while they fit: a string that does not fit whole is cut to what is
  left, a list keeps the leading elements that fit, anything else that does not fit is left out.
  `summary` comes last: it is the longest and the least useful to filter on;
- non-filterable (declared so when the index is created): `value_json`, the whole value as
  JSON (never cut; up to the service's 40 KB per vector), and `namespace`, the label list.

A memory's `embedding_b64` is its vector, so it is not repeated in `value_json`;
`document_of` puts it back. Its `context_b64` (`streams.write.contextual`) is left out: the
vector bucket is searched by the embedding alone, and a context vector would take 1 KB of the
40 KB for nothing.
"""
from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, get_args
from uuid import NAMESPACE_URL, uuid5

import numpy as np
from langgraph.store.base import Item, SearchItem

from streams.errors import MemstreamError
from sinks.s3vectors_client import StoredVector
from streams.memory.vector_index import decode_vector
from topics.candidates import MemoryType

MAX_FILTERABLE_BYTES = 2048
MAX_METADATA_BYTES = 40 * 1024
MAX_METADATA_KEYS = 50
MAX_NAMESPACE_DEPTH = 16

VALUE_JSON = "value_json"
NAMESPACE = "namespace"
NON_FILTERABLE_KEYS = (VALUE_JSON, NAMESPACE)
FLATTENED_FIELDS = ("user_id", "type", "category", "state", "importance", "pinned", "source",
                    "last_accessed", "event_start", "event_end", "tags", "summary")
"""`event_start`/`event_end`: the days the summary mentions (ISO dates), so a store filter can
select "what happened on 2022-05-07" as the worker's time filters do."""
MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)


class LayoutError(MemstreamError, ValueError):
    """This item cannot be laid out as a vector (bad namespace, key, embedding or size)."""


def ns_key(level: int) -> str:
    return f"ns_{level}"


def _check_namespace(namespace: Sequence[str]) -> tuple[str, ...]:
    labels = tuple(namespace)
    if not 1 <= len(labels) <= MAX_NAMESPACE_DEPTH:
        raise LayoutError(f"a namespace has 1 to {MAX_NAMESPACE_DEPTH} labels, not {len(labels)}")
    for label in labels:
        # "|" and "::" separate the parts of the uuid5 name: allowing them would let two
        # different (namespace, key) pairs share a vector.
        if not isinstance(label, str) or not label or "|" in label or "::" in label:
            raise LayoutError("namespace labels are non-empty strings without '|' or '::'")
    return labels


def vector_key(namespace: Sequence[str], doc_key: str) -> str:
    """The deterministic key of the vector of (namespace, doc_key), seed 002's uuid5."""
    labels = _check_namespace(namespace)
    if not isinstance(doc_key, str) or not doc_key:
        raise LayoutError("an item's key is a non-empty string")
    return str(uuid5(NAMESPACE_URL, f"{'|'.join(labels)}::{doc_key}"))


def namespace_conditions(prefix: Sequence[str]) -> list[dict[str, Any]]:
    """Filter conditions selecting the items under a namespace prefix."""
    return [{ns_key(i): {"$eq": label}} for i, label in enumerate(prefix)]


def metadata_bytes(metadata: Mapping[str, Any]) -> int:
    """Size of metadata as compact UTF-8 JSON, keys included: at least what the service counts."""
    return len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode())


def filterable_part(metadata: Mapping[str, Any],
                    non_filterable: Sequence[str] = NON_FILTERABLE_KEYS) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k not in non_filterable}


def placeholder_vector(dimension: int) -> list[float]:
    """The vector of an item stored without an embedding (`is_indexed` false). Not seed 002's
    zero vector: a zero vector has no cosine direction."""
    return [1.0] + [0.0] * (dimension - 1)


def build_metadata(namespace: Sequence[str], doc_key: str, value: Mapping[str, Any], *,
                   created_at: str, updated_at: str, is_indexed: bool) -> dict[str, Any]:
    """The metadata of one vector (see the module docstring for the layout and its limits)."""
    labels = _check_namespace(namespace)
    try:
        value_json = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise LayoutError(f"the value is not JSON: {type(exc).__name__}") from None
    filterable: dict[str, Any] = {ns_key(i): label for i, label in enumerate(labels)}
    filterable.update(ns_depth=len(labels), doc_key=doc_key, created_at=created_at,
                      updated_at=updated_at, is_indexed=is_indexed)
    if metadata_bytes(filterable) > MAX_FILTERABLE_BYTES:
        raise LayoutError("namespace and key alone exceed the 2 KB of filterable metadata")
    for name in FLATTENED_FIELDS:
        fitted = _fitted(filterable, name, value.get(name))
        if fitted is not None:
            filterable[name] = fitted
    metadata = {**filterable, VALUE_JSON: value_json, NAMESPACE: list(labels)}
    if metadata_bytes(metadata) > MAX_METADATA_BYTES:
        raise LayoutError(f"the value takes {len(value_json.encode())} bytes; a vector's "
                          f"metadata holds {MAX_METADATA_BYTES} at most")
    return metadata


def _fits(filterable: Mapping[str, Any], name: str, candidate: Any) -> bool:
    return metadata_bytes({**filterable, name: candidate}) <= MAX_FILTERABLE_BYTES


def _fitted(filterable: Mapping[str, Any], name: str, value: Any) -> Any:
    """`value` as far as it fits next to `filterable`: whole, cut (strings), its leading elements
    (lists of primitives), or None (left out)."""
    if value is None or isinstance(value, Mapping):
        return None
    if isinstance(value, str):
        if _fits(filterable, name, value):
            return value
        low, high = 0, len(value)  # the longest prefix that fits, by bisection
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if _fits(filterable, name, value[:middle]) else (low, middle - 1)
        return value[:low] or None
    if isinstance(value, list):
        if not all(isinstance(v, (str, int, float, bool)) for v in value):
            return None
        kept: list[Any] = []
        for element in value:
            if not _fits(filterable, name, [*kept, element]):
                break
            kept.append(element)
        return kept or None
    if isinstance(value, (int, float, bool)):
        return value if _fits(filterable, name, value) else None
    return None


# --- memories (the sink) --------------------------------------------------------------------------

def memory_namespace(document: Mapping[str, Any]) -> tuple[str, str]:
    """A memory's namespace: (user_id, type)."""
    return (str(document.get("user_id") or ""), str(document.get("type") or ""))


def memory_delete_keys(user_id: str, doc_key: str, memory_type: str | None) -> list[str]:
    """The vector keys a memory can have: one when its type is known, else one per type."""
    types = (memory_type,) if memory_type else MEMORY_TYPES
    return [vector_key((user_id, t), doc_key) for t in types]


def decode_embedding(embedding_b64: Any, dimension: int) -> list[float]:
    """A memory's embedding as float32 values (stored as float16 or, before, float32:
    `decode_vector`), checked against the index dimension."""
    if not isinstance(embedding_b64, str) or not embedding_b64:
        raise LayoutError("the memory has no embedding_b64")
    try:
        vector = decode_vector(embedding_b64)
    except ValueError:
        raise LayoutError("embedding_b64 is not base64 of float16 or float32 values") from None
    if vector.size != dimension:
        raise LayoutError(f"the embedding has {vector.size} dimensions; the index has {dimension}")
    if not np.all(np.isfinite(vector)) or not np.any(vector):
        raise LayoutError("the embedding is zero or not finite")
    return [float(x) for x in vector]


def memory_vector(document: Mapping[str, Any], dimension: int) -> StoredVector:
    """The vector of one memory document (`Memory.model_dump(mode="json")`)."""
    namespace = memory_namespace(document)
    if namespace[1] not in MEMORY_TYPES:
        raise LayoutError(f"unknown memory type; expected one of {', '.join(MEMORY_TYPES)}")
    for stamp in ("created_at", "updated_at"):
        if not isinstance(document.get(stamp), str):
            raise LayoutError(f"the memory has no {stamp}")
    data = decode_embedding(document.get("embedding_b64"), dimension)
    value = {k: v for k, v in document.items() if k not in ("embedding_b64", "context_b64")}
    doc_key = str(document.get("id") or "")
    metadata = build_metadata(namespace, doc_key, value, created_at=document["created_at"],
                              updated_at=document["updated_at"],
                              is_indexed=document.get("state", "active") == "active")
    return StoredVector(vector_key(namespace, doc_key), metadata, data)


# --- the inverse --------------------------------------------------------------------------------

def namespace_of(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    labels = metadata.get(NAMESPACE)
    if isinstance(labels, list) and labels:
        return tuple(str(label) for label in labels)
    depth = int(metadata.get("ns_depth", 0))
    return tuple(str(metadata[ns_key(i)]) for i in range(depth))


def value_of(metadata: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(metadata[VALUE_JSON])
    except (KeyError, TypeError, ValueError):
        raise LayoutError("the vector has no readable value_json") from None


def document_of(vector: StoredVector) -> dict[str, Any]:
    """The memory document a vector was written from (with `embedding_b64` when `data` came
    back; `context_b64` None, the layout leaves it out)."""
    document = {**value_of(vector.metadata), "context_b64": None}
    if vector.data is not None:
        raw = np.asarray(vector.data, dtype=np.float32).tobytes()
        document["embedding_b64"] = base64.b64encode(raw).decode()
    return document


def item_of(metadata: Mapping[str, Any]) -> Item:
    """The LangGraph item stored in a vector's metadata."""
    return Item(value=value_of(metadata), key=str(metadata["doc_key"]),
                namespace=namespace_of(metadata), created_at=_time(metadata["created_at"]),
                updated_at=_time(metadata["updated_at"]))


def search_item_of(metadata: Mapping[str, Any], score: float | None) -> SearchItem:
    item = item_of(metadata)
    return SearchItem(namespace=item.namespace, key=item.key, value=item.value,
                      created_at=item.created_at, updated_at=item.updated_at, score=score)


def _time(stamp: Any) -> datetime:
    return datetime.fromisoformat(str(stamp))
