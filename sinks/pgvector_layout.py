"""The pgvector layout: LangGraph `PostgresStore`'s own tables, as pure functions and SQL.

memstream writes into the two tables langgraph-checkpoint-postgres's `PostgresStore` makes
(its `MIGRATIONS` and `VECTOR_MIGRATIONS`), in a schema of their own (`PGVECTOR_SCHEMA`), so an
unmodified `PostgresStore` whose connection's `search_path` is that schema reads and searches
memstream's memories directly:

- `store`: one row per memory. `prefix` is the namespace `(user label, type)` joined by ".",
  `key` the memory id, `value` the memory document (jsonb) without its vectors
  (`embedding_b64`, `context_b64`), `created_at`/`updated_at` the memory's own (event) times,
  so a replay writes the same row.
- `store_vectors`: one row per *active* memory: `field_name` "summary", `embedding`
  `vector(dims)` (the memory's embedding of its summary), under an HNSW index with cosine
  distance. A memory that is not active (superseded, soft-deleted, archived) keeps its `store`
  row but no vector, as `PostgresStore` does with `put(..., index=False)`: `get` finds it, a
  semantic search does not. A reader's index config is `{"dims": dims, "fields": ["summary"]}`.

`store_migrations` and `vector_migrations` record the migrations as applied, so a reader's
`PostgresStore.setup()` finds nothing left to do (`tests/integration/test_pgvector_sink.py`
checks the tables against the ones `setup()` makes).

`PostgresStore` refuses a namespace label with a "." (it joins labels with "."), and a user id
may have one: `user_label` escapes "%" and "." (as %25, %2E), and a reader addresses such a user
as `(user_label(user_id), type)`; every other id is its own label.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, get_args

from sinks.s3vectors_layout import LayoutError, decode_embedding
from topics.candidates import MemoryType

MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)
VECTOR_FIELD = "summary"
"""The field the vector embeds (the reader's `fields`)."""
STORE_MIGRATIONS = 4
VECTOR_MIGRATIONS = 3
"""How many of PostgresStore's migrations the tables below are (langgraph-checkpoint-postgres
3.2.0: `MIGRATIONS` v0-v3, `VECTOR_MIGRATIONS` v0-v2)."""
LEFT_OUT = ("embedding_b64", "context_b64")


def user_label(user_id: str) -> str:
    """The namespace label of a user: the id, with "%" and "." escaped (PostgresStore refuses
    a label with a ".")."""
    return user_id.replace("%", "%25").replace(".", "%2E")


def prefix(user_id: str, memory_type: str) -> str:
    """`store.prefix` of a user's memories of one type (PostgresStore's `".".join(namespace)`)."""
    return f"{user_label(user_id)}.{memory_type}"


def user_prefixes(user_id: str, memory_type: str | None = None) -> list[str]:
    """Every prefix a memory of the user can be under: one when its type is known."""
    return [prefix(user_id, t) for t in ((memory_type,) if memory_type else MEMORY_TYPES)]


@dataclass(frozen=True)
class MemoryRow:
    """What one memory document becomes: its `store` row and, when active, its vector."""

    prefix: str
    key: str
    value: dict[str, Any]
    version: int
    created_at: datetime
    updated_at: datetime
    embedding: list[float] | None
    """None for a memory that is not active: no `store_vectors` row."""
    other_prefixes: list[str]
    """The user's prefixes of the other types: a row the memory left there is removed."""


def memory_row(user_id: str, document: Mapping[str, Any], dimension: int) -> MemoryRow:
    """The row of one memory document (`Memory.model_dump(mode="json")`); raises LayoutError."""
    if document.get("user_id") != user_id:
        raise LayoutError("the document's user_id is not the record's")
    memory_type = document.get("type")
    if memory_type not in MEMORY_TYPES:
        raise LayoutError(f"unknown memory type; expected one of {', '.join(MEMORY_TYPES)}")
    key = document.get("id")
    if not isinstance(key, str) or not key:
        raise LayoutError("the memory has no id")
    if "\x00" in user_id:
        raise LayoutError("a user id with a NUL byte cannot be a namespace label")
    try:
        created_at, updated_at = (datetime.fromisoformat(str(document[f])) for f in ("created_at", "updated_at"))
    except (KeyError, ValueError):
        raise LayoutError("the memory has no created_at or updated_at") from None
    version = document.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise LayoutError("the memory's version is not an integer")
    active = document.get("state", "active") == "active"
    embedding = decode_embedding(document.get("embedding_b64"), dimension) if active else None
    value = {k: v for k, v in document.items() if k not in LEFT_OUT}
    own = prefix(user_id, memory_type)
    return MemoryRow(own, key, value, version, created_at, updated_at, embedding,
                     [p for p in user_prefixes(user_id) if p != own])


def vector_text(embedding: list[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(repr(float(x)) for x in embedding) + "]"


# --- SQL: `{schema}` is filled with the quoted schema name ------------------------------------

TABLES = (
    'CREATE SCHEMA IF NOT EXISTS {schema}',
    'CREATE EXTENSION IF NOT EXISTS vector',
    """CREATE TABLE IF NOT EXISTS {schema}.store (
    prefix text NOT NULL,
    key text NOT NULL,
    value jsonb NOT NULL,
    created_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
    expires_at TIMESTAMP WITH TIME ZONE,
    ttl_minutes INT,
    PRIMARY KEY (prefix, key))""",
    'CREATE INDEX IF NOT EXISTS store_prefix_idx ON {schema}.store USING btree (prefix text_pattern_ops)',
    'CREATE INDEX IF NOT EXISTS idx_store_expires_at ON {schema}.store (expires_at) WHERE expires_at IS NOT NULL',
    """CREATE TABLE IF NOT EXISTS {schema}.store_vectors (
    prefix text NOT NULL,
    key text NOT NULL,
    field_name text NOT NULL,
    embedding vector({dims}),
    created_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (prefix, key, field_name),
    FOREIGN KEY (prefix, key) REFERENCES {schema}.store(prefix, key) ON DELETE CASCADE)""",
    """CREATE INDEX IF NOT EXISTS store_vectors_embedding_idx ON {schema}.store_vectors
    USING hnsw (embedding vector_cosine_ops)""",
    'CREATE TABLE IF NOT EXISTS {schema}.store_migrations (v INTEGER PRIMARY KEY)',
    'CREATE TABLE IF NOT EXISTS {schema}.vector_migrations (v INTEGER PRIMARY KEY)',
    f"""INSERT INTO {{schema}}.store_migrations (v) SELECT generate_series(0, {STORE_MIGRATIONS - 1})
    ON CONFLICT DO NOTHING""",
    f"""INSERT INTO {{schema}}.vector_migrations (v) SELECT generate_series(0, {VECTOR_MIGRATIONS - 1})
    ON CONFLICT DO NOTHING""",
)
"""PostgresStore's tables (its migrations, run in one transaction: no CONCURRENTLY), and its
migration records."""

VECTOR_DIMS = """SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = %s AND c.relname = 'store_vectors' AND a.attname = 'embedding'"""
"""The declared type of an existing `store_vectors.embedding` (`vector(384)`), or no row."""

_VERSION = "coalesce((value->>'version')::bigint, 0)"

MOVE_OUT = f"""DELETE FROM {{schema}}.store WHERE key = %(key)s AND prefix = ANY(%(other_prefixes)s)
    AND {_VERSION} <= %(version)s"""
"""A memory whose type changed leaves its old namespace."""

UPSERT = """INSERT INTO {schema}.store AS s (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
    VALUES (%(prefix)s, %(key)s, %(value)s, %(created_at)s, %(updated_at)s, NULL, NULL)
    ON CONFLICT (prefix, key) DO UPDATE SET value = EXCLUDED.value, created_at = EXCLUDED.created_at,
        updated_at = EXCLUDED.updated_at
    WHERE coalesce((s.value->>'version')::bigint, 0) <= coalesce((EXCLUDED.value->>'version')::bigint, 0)"""
"""Idempotent by memory id and revision: an older revision (a late replay) never overwrites a
newer one; the same revision again rewrites the same row."""

_CURRENT = f"""EXISTS (SELECT 1 FROM {{schema}}.store WHERE prefix = %(prefix)s AND key = %(key)s
    AND {_VERSION} = %(version)s)"""

PUT_VECTOR = f"""INSERT INTO {{schema}}.store_vectors (prefix, key, field_name, embedding, created_at, updated_at)
    SELECT %(prefix)s, %(key)s, '{VECTOR_FIELD}', %(embedding)s::vector, %(created_at)s, %(updated_at)s
    WHERE {_CURRENT}
    ON CONFLICT (prefix, key, field_name) DO UPDATE SET embedding = EXCLUDED.embedding,
        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at"""
"""The vector of an active memory, only when its row holds this revision."""

DROP_VECTOR = f"""DELETE FROM {{schema}}.store_vectors WHERE prefix = %(prefix)s AND key = %(key)s
    AND {_CURRENT}"""
"""A memory no longer active is no longer found by a semantic search."""

DELETE = "DELETE FROM {schema}.store WHERE key = %(key)s AND prefix = ANY(%(prefixes)s)"
"""A memory gone (deleted, purged): its row, and by the foreign key its vector."""

USER_ROWS = """SELECT (SELECT count(*) FROM {schema}.store WHERE prefix = ANY(%(prefixes)s))
    + (SELECT count(*) FROM {schema}.store_vectors WHERE prefix = ANY(%(prefixes)s))"""
"""The purge scan of one user: rows of either table under the user's prefixes."""
