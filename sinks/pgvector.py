"""The pgvector sink: memories into PostgreSQL, in LangGraph `PostgresStore`'s own layout.

`PgVectorDestination` implements `sinks.base.Destination` over one psycopg async connection
(the runner writes one batch at a time). `start` creates the schema, the `vector` extension and
the tables (`sinks/pgvector_layout.py`) under an advisory lock, so workers starting together do
not race, and refuses an existing `store_vectors` of another dimension than the embedder's.
`write` keeps the last operation per memory, refuses what cannot be laid out, and writes the
batch in one transaction: upserts guarded by the memory's revision, the vector of each active
memory, deletes of memories gone (their vectors go by the foreign key). A connection lost, a
server shutting down, a serialisation failure or a deadlock is a TransientSinkError (the
runner retries the whole batch, harmless: every statement is idempotent); anything else the
server refuses is a PermanentSinkError.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sinks.base import PermanentSinkError, Rejected, SinkRecord, TransientSinkError, is_upsert
from sinks.pgvector_layout import (
    DELETE,
    DROP_VECTOR,
    MOVE_OUT,
    PUT_VECTOR,
    TABLES,
    UPSERT,
    USER_ROWS,
    VECTOR_DIMS,
    LayoutError,
    MemoryRow,
    memory_row,
    user_prefixes,
    vector_text,
)
from sinks.s3vectors import index_dimension
from streams.settings import Settings

try:
    import psycopg
    from psycopg import sql
    from psycopg.types.json import Jsonb
except ImportError as exc:  # pragma: no cover - a pinned dependency of memstream
    raise ImportError("the pgvector sink needs psycopg: pip install 'psycopg[binary]'") from exc

log = logging.getLogger(__name__)

TRANSIENT_STATES = ("08", "40", "53", "57")
"""SQLSTATE classes worth a retry: connection exceptions, transaction rollback (serialisation,
deadlock), insufficient resources, operator intervention (shutdown, cancel)."""
LOCK_ID = 0x6D656D73  # "mems": one advisory lock for creating the tables


def _raise_for(exc: psycopg.Error) -> None:
    """Map a psycopg error to the sink contract (never the URL, never content)."""
    state = getattr(exc, "sqlstate", None) or ""
    name = type(exc).__name__
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) or state[:2] in TRANSIENT_STATES:
        raise TransientSinkError(f"postgres unavailable ({name} {state})".strip()) from None
    raise PermanentSinkError(f"postgres refused the batch ({name} {state})".strip()) from None


class PgVectorDestination:
    """Memories to PostgreSQL with pgvector (see the module docstring)."""

    name = "pgvector"

    def __init__(self, url: str, *, dimension: int, schema: str = "memstream",
                 timeout: float = 10.0) -> None:
        self._url = url
        self.dimension = dimension
        self.schema = schema
        self._timeout = timeout
        self._conn: psycopg.AsyncConnection[Any] | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> PgVectorDestination:
        """PGVECTOR_URL and PGVECTOR_SCHEMA; the dimension is the embedder's."""
        s = settings.sinks
        if not s.pgvector_url:
            raise PermanentSinkError("the pgvector sink needs PGVECTOR_URL")
        return cls(s.pgvector_url, dimension=index_dimension(settings), schema=s.pgvector_schema,
                   timeout=s.pgvector_timeout_seconds)

    def _sql(self, template: str) -> sql.Composed:
        return sql.SQL(template).format(schema=sql.Identifier(self.schema),
                                        dims=sql.Literal(self.dimension))

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = await psycopg.AsyncConnection.connect(
                    self._url, connect_timeout=max(1, int(self._timeout)),
                    options=f"-c statement_timeout={int(self._timeout * 1000)}")
            except psycopg.Error as exc:
                _raise_for(exc)
        assert self._conn is not None
        return self._conn

    async def start(self) -> None:
        try:
            conn = await self._connection()
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_ID,))
                found = await (await conn.execute(VECTOR_DIMS, (self.schema,))).fetchone()
                if found is not None and found[0] != f"vector({self.dimension})":
                    raise PermanentSinkError(
                        f"{self.schema}.store_vectors has embedding {found[0]}, but the embeddings "
                        f"have {self.dimension} dimensions: use another PGVECTOR_SCHEMA or set "
                        f"EMBEDDER / BEDROCK_EMBED_DIMENSIONS to the embedder it was made with")
                for statement in TABLES:
                    await conn.execute(self._sql(statement))
        except psycopg.Error as exc:
            await self._drop_broken()
            _raise_for(exc)
        log.info("pgvector sink ready: schema %s, %d dimensions", self.schema, self.dimension)

    async def write(self, batch: Sequence[SinkRecord]) -> list[Rejected]:
        rejected: list[Rejected] = []
        final: dict[tuple[str, str], tuple[SinkRecord, MemoryRow | None]] = {}
        for record in batch:
            document = record.document or {}
            key = str(document.get("id") or record.key)
            try:
                row = memory_row(record.user_id, document, self.dimension) if is_upsert(record) else None
            except LayoutError as exc:
                rejected.append(Rejected(record, f"pgvector layout: {exc}"))
                continue
            final.pop((record.user_id, key), None)  # the dict keeps the order of last writes
            final[(record.user_id, key)] = (record, row)
        if final:
            await self._write(final)
        return rejected

    async def _write(self, final: dict[tuple[str, str], tuple[SinkRecord, MemoryRow | None]]) -> None:
        upserts = [self._params(row) for _, row in final.values() if row is not None]
        deletes = [{"key": key, "prefixes": user_prefixes(user_id, (record.document or {}).get("type"))}
                   for (user_id, key), (record, row) in final.items() if row is None]
        try:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                if deletes:
                    await cur.executemany(self._sql(DELETE), deletes)
                if upserts:
                    await cur.executemany(self._sql(MOVE_OUT), upserts)
                    await cur.executemany(self._sql(UPSERT), upserts)
                    vectors = [p for p in upserts if p["embedding"] is not None]
                    if vectors:
                        await cur.executemany(self._sql(PUT_VECTOR), vectors)
                    inactive = [p for p in upserts if p["embedding"] is None]
                    if inactive:
                        await cur.executemany(self._sql(DROP_VECTOR), inactive)
        except psycopg.Error as exc:
            await self._drop_broken()
            _raise_for(exc)

    @staticmethod
    def _params(row: MemoryRow) -> dict[str, Any]:
        return {"prefix": row.prefix, "key": row.key,
                "value": Jsonb(row.value),
                "version": row.version, "created_at": row.created_at, "updated_at": row.updated_at,
                "embedding": vector_text(row.embedding) if row.embedding is not None else None,
                "other_prefixes": row.other_prefixes}

    async def user_rows(self, user_id: str) -> int:
        """The purge scan of one user: rows of `store` and `store_vectors` still under the
        user's namespaces (0 after a purge)."""
        try:
            conn = await self._connection()
            found = await (await conn.execute(self._sql(USER_ROWS),
                                              {"prefixes": user_prefixes(user_id)})).fetchone()
            await conn.commit()
        except psycopg.Error as exc:
            await self._drop_broken()
            _raise_for(exc)
        return int(found[0]) if found else 0

    async def _drop_broken(self) -> None:
        """Close a connection an error may have left unusable; the next call opens another."""
        if self._conn is not None:
            try:
                await self._conn.close()
            finally:
                self._conn = None

    async def close(self) -> None:
        await self._drop_broken()
