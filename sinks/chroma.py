"""The Chroma sink: memories into one collection of all users (`sinks/chroma_layout.py`).

`ChromaDestination` implements `sinks.base.Destination` over Chroma's persistent client
(CHROMA_PATH: Chroma embedded in the worker) or its HTTP client (CHROMA_URL: a `chroma run`
server). `start` gets or creates the collection with cosine distance and refuses one whose
vectors have another dimension than the embedder's. `write` keeps the last operation per memory,
refuses what cannot be laid out, reads the versions already stored and upserts only what is
not older (Chroma has no conditional write: idempotent by memory id and revision), then deletes
the memories gone. Chroma's clients block: every call runs off the event loop. A server that
cannot be reached, times out, answers 429 or 5xx is a TransientSinkError (the runner retries the
batch; upserts and deletes by id make that harmless); any other refusal a PermanentSinkError.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from sinks.base import PermanentSinkError, Rejected, SinkRecord, TransientSinkError, is_upsert
from sinks.chroma_layout import ChromaRecord, chroma_record
from sinks.s3vectors import index_dimension
from sinks.s3vectors_layout import LayoutError
from streams.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
CHUNK = 1000
"""Records per Chroma call at most (its servers take a few thousand; SINK_BATCH_SIZE may be more)."""


def _is_transient(exc: BaseException | None, depth: int = 0) -> bool:
    """A network error, a timeout, a 429 or 5xx, also as the cause of another error (the HTTP
    client's constructor turns a refused connection into a ValueError)."""
    import httpx
    from chromadb.errors import ChromaError

    if exc is None or depth > 4:
        return False
    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    if isinstance(exc, ChromaError):
        code = exc.code()
        return code == 429 or code >= 500
    return _is_transient(exc.__cause__ or exc.__context__, depth + 1)


def make_client(*, path: str | None = None, url: str | None = None) -> Any:
    """Chroma's HTTP client for `url`, else its persistent client on `path`; telemetry off."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False)
    if url:
        parts = urlsplit(url)
        ssl = parts.scheme == "https"
        client = chromadb.HttpClient(host=parts.hostname or "127.0.0.1",
                                     port=parts.port or (443 if ssl else 8000), ssl=ssl,
                                     settings=settings)
        return client
    if not path:
        raise PermanentSinkError("the Chroma sink needs CHROMA_PATH or CHROMA_URL")
    return chromadb.PersistentClient(path=path, settings=settings)


class ChromaDestination:
    """Memories to Chroma (see the module docstring)."""

    name = "chroma"

    def __init__(self, client_factory: Callable[[], Any], *, dimension: int,
                 collection: str = "memstream-memories", timeout: float = 10.0) -> None:
        self._client_factory = client_factory
        self._timeout = timeout
        self.dimension = dimension
        self.collection_name = collection
        self._collection: Any = None

    @classmethod
    def from_settings(cls, settings: Settings) -> ChromaDestination:
        """CHROMA_URL or CHROMA_PATH, CHROMA_COLLECTION; the dimension is the embedder's."""
        s = settings.sinks
        if not (s.chroma_url or s.chroma_path):
            raise PermanentSinkError("the Chroma sink needs CHROMA_PATH or CHROMA_URL")
        return cls(lambda: make_client(path=s.chroma_path, url=s.chroma_url),
                   dimension=index_dimension(settings), collection=s.chroma_collection,
                   timeout=s.chroma_timeout_seconds)

    async def _call(self, call: Callable[[], T]) -> T:
        try:
            # Chroma's HTTP client waits without a limit: the call is given up on after the
            # timeout (its thread finishes on its own) and the batch retried.
            return await asyncio.wait_for(asyncio.to_thread(call), self._timeout)
        except (PermanentSinkError, TransientSinkError):
            raise
        except Exception as exc:  # noqa: BLE001 - chromadb and httpx raise many kinds; mapped here
            if _is_transient(exc):
                self._collection = None  # reconnect on the next call
                raise TransientSinkError(f"chroma unavailable ({type(exc).__name__})") from None
            # Never the error's text: Chroma's may quote a document or its metadata, and the
            # reason of a dead letter is not sealed.
            code = exc.code() if callable(getattr(exc, "code", None)) else None
            raise PermanentSinkError(f"chroma refused the batch ({type(exc).__name__}"
                                     f"{f' {code}' if code else ''})") from None

    def _open(self) -> Any:
        client = self._client_factory()
        collection = client.get_or_create_collection(
            self.collection_name, configuration={"hnsw": {"space": "cosine"}},
            embedding_function=None)
        found = collection.peek(1)
        embeddings = found.get("embeddings")
        if embeddings is not None and len(embeddings) and len(embeddings[0]) != self.dimension:
            raise PermanentSinkError(
                f"Chroma collection {self.collection_name} holds {len(embeddings[0])}-dimension "
                f"vectors, but the embeddings have {self.dimension}: use another CHROMA_COLLECTION "
                f"or set EMBEDDER / BEDROCK_EMBED_DIMENSIONS to the embedder it was made with")
        return collection

    async def start(self) -> None:
        self._collection = await self._call(self._open)
        log.info("chroma sink ready: collection %s, %d dimensions", self.collection_name, self.dimension)

    async def _ready(self) -> Any:
        if self._collection is None:
            await self.start()
        return self._collection

    async def write(self, batch: Sequence[SinkRecord]) -> list[Rejected]:
        rejected: list[Rejected] = []
        final: dict[str, ChromaRecord | None] = {}
        for record in batch:
            memory_id = str((record.document or {}).get("id") or record.key)
            try:
                laid_out = (chroma_record(record.user_id, record.document or {}, self.dimension)
                            if is_upsert(record) else None)
            except LayoutError as exc:
                rejected.append(Rejected(record, f"chroma layout: {exc}"))
                continue
            final.pop(memory_id, None)
            final[memory_id] = laid_out
        if not final:
            return rejected
        collection = await self._ready()
        upserts = [r for r in final.values() if r is not None]
        deletes = [memory_id for memory_id, r in final.items() if r is None]
        for start in range(0, len(upserts), CHUNK):
            await self._upsert(collection, upserts[start:start + CHUNK])
        for start in range(0, len(deletes), CHUNK):
            chunk = deletes[start:start + CHUNK]
            await self._call(lambda: collection.delete(ids=chunk))
        return rejected

    async def _upsert(self, collection: Any, records: list[ChromaRecord]) -> None:
        """Upsert what is not older than what is stored (by the memory's version)."""
        stored = await self._call(lambda: collection.get(ids=[r.id for r in records],
                                                         include=["metadatas"]))
        versions = {i: int((m or {}).get("version", 0))
                    for i, m in zip(stored["ids"], stored["metadatas"] or [], strict=False)}
        newer = [r for r in records if r.version >= versions.get(r.id, 0)]
        if newer:
            await self._call(lambda: collection.upsert(
                ids=[r.id for r in newer], embeddings=[r.embedding for r in newer],
                documents=[r.document for r in newer], metadatas=[r.metadata for r in newer]))

    async def user_rows(self, user_id: str) -> int:
        """The purge scan of one user: records in the collection with the user's `user_id`
        (0 after a purge)."""
        collection = await self._ready()
        found = await self._call(lambda: collection.get(where={"user_id": user_id}, include=[]))
        return len(found["ids"])

    async def close(self) -> None:
        """Chroma's clients hold nothing that needs releasing here; the next start reopens."""
        self._collection = None
