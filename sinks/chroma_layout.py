"""The Chroma layout: one collection per deployment, one record per memory, as pure functions.

A record's id is the memory id (a uuid5 of the user and the turn: unique across users), its
embedding the memory's embedding of its summary (a memory that is not active and kept no vector
gets the placeholder `[1, 0, …]`: Chroma stores none without one), its document the summary,
and its metadata
what a reader filters on: `user_id`, `type`, `category`, `state`, `importance`, `pinned`,
`source`, `version`, `created_at`, `updated_at`, `event_start`, `event_end` and `tags` when
set, and `value_json`, the whole memory document (without its vectors) as JSON. Every state is
written: a reader that wants what memstream serves filters on `state` "active" (and always on
`user_id`):

    collection.query(query_embeddings=[vector], n_results=5,
                     where={"$and": [{"user_id": "ana"}, {"state": "active"}]})
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sinks.s3vectors_layout import LayoutError, decode_embedding, placeholder_vector

FILTERABLE = ("user_id", "type", "category", "state", "importance", "pinned", "source", "version",
              "created_at", "updated_at", "event_start", "event_end", "tags")
VALUE_JSON = "value_json"
LEFT_OUT = ("embedding_b64", "context_b64")


@dataclass(frozen=True)
class ChromaRecord:
    """One memory as a Chroma record."""

    id: str
    embedding: list[float]
    document: str
    metadata: dict[str, Any]
    version: int


def _metadata_value(value: Any) -> Any:
    """A value Chroma's metadata takes (str, int, float, bool, a non-empty list of one of
    them), or None to leave it out."""
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None


def chroma_record(user_id: str, document: Mapping[str, Any], dimension: int) -> ChromaRecord:
    """The record of one memory document (`Memory.model_dump(mode="json")`); raises LayoutError."""
    if document.get("user_id") != user_id:
        raise LayoutError("the document's user_id is not the record's")
    memory_id = document.get("id")
    if not isinstance(memory_id, str) or not memory_id:
        raise LayoutError("the memory has no id")
    version = document.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise LayoutError("the memory's version is not an integer")
    active = document.get("state", "active") == "active"
    if active or document.get("embedding_b64"):
        embedding = decode_embedding(document.get("embedding_b64"), dimension)
    else:  # not searchable anyway (a superseded memory whose vector the index let go)
        embedding = placeholder_vector(dimension)
    value = {k: v for k, v in document.items() if k not in LEFT_OUT}
    metadata = {name: kept for name in FILTERABLE
                if (kept := _metadata_value(document.get(name))) is not None}
    metadata[VALUE_JSON] = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return ChromaRecord(memory_id, embedding, str(document.get("summary") or ""), metadata, version)


def document_of(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The memory document a record was written from (without its vectors)."""
    try:
        return json.loads(metadata[VALUE_JSON])
    except (KeyError, TypeError, ValueError):
        raise LayoutError("the record has no readable value_json") from None
