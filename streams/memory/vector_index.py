"""In-worker nearest-neighbour index over the memories of the users a worker owns.

The durable state is the Faust `memories` table (RocksDB + changelog); this index is a cache
rebuilt from it after every recovery, so it never needs its own persistence.
"""
from __future__ import annotations

import base64
import logging
import sys
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, get_args

import numpy as np

from streams.memory import write_budget
from streams.memory.lexical_index import LexicalIndex
from streams.memory.model import Memory
from topics.candidates import MemoryType

log = logging.getLogger(__name__)


HALF_PREFIX = "h:"
"""Marks a vector stored as float16 (`encode_vector`). A float32 one, as written before, is
plain base64, which never holds a colon."""
INT8_PREFIX = "i8:"
"""Marks a vector stored as int8 with its scale (`encode_context_vector`)."""


def encode_vector(vector: np.ndarray) -> str:
    """A vector as documents and records carry it: float16, base64, after `HALF_PREFIX`.

    Half the bytes of float32 in every record that carries a vector (the memory document in
    the `memories` changelog, the `applied` record's writes, a candidate's carried vector):
    the vectors are unit length, and float16 keeps their cosines to about 1e-3 (issue 22:
    recall and the duplicate rate measured unchanged). `as_stored` rounds a fresh vector the
    same way, so the index holds what a rebuild from the documents would."""
    half = np.asarray(vector, dtype=np.float32).astype(np.float16)
    return HALF_PREFIX + base64.b64encode(half.tobytes()).decode("ascii")


def encode_context_vector(vector: np.ndarray) -> str:
    """A context vector (`Memory.context_b64`) as documents and records carry it: int8, scaled
    by its largest component (a float32 before the values), base64, after `INT8_PREFIX`.

    Half the bytes of `encode_vector` again. Only queries read a context vector (they search by
    normalise(embedding + context)); dedup, forgetting and links search the embeddings, which
    stay float16: int8 moves cosines about 30 times more than float16 does, enough to change
    dedup's decisions near a band, not a query's ranking (docs/decisions.md#context-vectors-in-int8)."""
    values = np.asarray(vector, dtype=np.float32).reshape(-1)
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    scale = np.float32(peak / 127.0 if peak > 0 else 1.0)
    quantised = np.clip(np.rint(values / scale), -127, 127).astype(np.int8)
    return INT8_PREFIX + base64.b64encode(scale.tobytes() + quantised.tobytes()).decode("ascii")


def decode_vector(data: str) -> np.ndarray:
    """A vector written by `encode_vector`, `encode_context_vector`, or the float32 format
    before them, as float32. Raises ValueError for text that is not one (not base64, or a
    size no vector has)."""
    if data.startswith(HALF_PREFIX):
        raw = base64.b64decode(data[len(HALF_PREFIX):], validate=True)
        return np.frombuffer(raw, dtype=np.float16).astype(np.float32)
    if data.startswith(INT8_PREFIX):
        raw = base64.b64decode(data[len(INT8_PREFIX):], validate=True)
        if len(raw) < 4:
            raise ValueError("an int8 vector without its scale")
        scale = np.frombuffer(raw[:4], dtype=np.float32)[0]
        return np.frombuffer(raw[4:], dtype=np.int8).astype(np.float32) * scale
    return np.frombuffer(base64.b64decode(data, validate=True), dtype=np.float32)


def decode_sized(data: str | None, dim: int) -> np.ndarray | None:
    """The vector `data` holds (`decode_vector`) if it is one of `dim` values; None when there
    is none, it does not decode, or it has another size (another embedder's)."""
    if not data:
        return None
    try:
        vector = decode_vector(data)
    except ValueError:
        return None
    return vector if vector.size == dim else None


def as_stored(vector: np.ndarray) -> np.ndarray:
    """`vector` as a document stores it (rounded to float16), as float32."""
    return np.asarray(vector, dtype=np.float32).astype(np.float16).astype(np.float32)


_SHARED_FIELD_SETS: dict[frozenset[str], set[str]] = {}
_REPEATED_TEXT = ("user_id", "thread_id", "type", "category", "state", "role", "source",
                  "agent_id", "run_id", "actor_id")


_SAME_TIMES = ("updated_at", "last_accessed", "valid_from")
_SHARED_EMPTY: dict[str, Any] = {"tags": [], "entities": [], "related_ids": [],
                                 "consolidated_from": [], "relations": {}}
"""One empty container per field for every indexed document that has it empty (a fresh one
per document is 56-64 bytes each). Safe because index documents are never changed in place:
every change is a `model_copy(update=...)` (which shares containers already)."""


def compact(memory: Memory) -> Memory:
    """`memory`, lighter to hold by the hundred thousand: its set of fields given (pydantic
    keeps one per instance, 2 KB for ~40 fields) is shared with every memory that gave the same
    fields, the short texts most memories repeat (user, thread, category...) are interned, its
    empty lists and dict are shared ones (`_SHARED_EMPTY`), and times equal to `created_at` are
    that same object. Nothing it reads changes; this is the index's RAM per memory, halved."""
    fields = memory.__pydantic_fields_set__
    shared = _SHARED_FIELD_SETS.setdefault(frozenset(fields), set(fields))
    object.__setattr__(memory, "__pydantic_fields_set__", shared)
    values = memory.__dict__
    for name in _REPEATED_TEXT:
        value = values.get(name)
        if type(value) is str:
            values[name] = sys.intern(value)
    for name, empty in _SHARED_EMPTY.items():
        if values.get(name) == empty and values.get(name) is not empty:
            values[name] = empty
    created = values.get("created_at")
    for name in _SAME_TIMES:  # most memories are created, updated and read at one event time
        if values.get(name) == created and values.get(name) is not created:
            values[name] = created
    return memory


def said_on(memory: Memory) -> date:
    """The day a memory was said: its `date_iso` (the user's calendar) when it has one
    (episodic memories), else the UTC day it was created on."""
    if memory.date_iso:
        return date.fromisoformat(memory.date_iso)
    return memory.created_at.astimezone(timezone.utc).date()


def lexical_text(memory: Memory) -> str:
    """What BM25 indexes for a memory: its summary, its entities and the day it was said.

    The entities are the names the extractor found in the turn, and not all of them made it
    into the 280-character summary ("It's special to Ana" keeps no trace of the lake
    painting); indexed, a question naming them finds the memory (LoCoMo recall_any@10
    0.720 -> 0.730, better on both halves of the dev set). The day, written as people write
    it ("7 July 2023"; BM25 keeps the month and the year), lets a question that names a time
    the query parser makes no window of ("the first weekend of August 2023") still match the
    memories said then (LoCoMo recall_any@5 0.648 -> 0.656, both halves).
    """
    day = said_on(memory)
    return " ".join([memory.summary, *memory.entities, f"{day.day} {day:%B %Y}"])


def _day(date_iso: str | None) -> int:
    """`YYYY-MM-DD` as the int YYYYMMDD (0 when none), so date windows compare as numbers."""
    return int(date_iso.replace("-", "")) if date_iso else 0


@dataclass(frozen=True)
class Columns:
    """Per-row attributes of a user's memories (rows aligned with `UserIndex.ids`), so the
    filters of a query are numpy masks instead of a Python loop over every memory."""

    visible: np.ndarray
    archived: np.ndarray
    """In the cold tier (`Memory.is_archived`)."""
    replaced: np.ndarray
    """Has a `superseded_by`: a newer memory answers for it (a correction, a consolidation)."""
    type: np.ndarray
    """The memory type's code (`MEMORY_TYPE_CODES`)."""
    category: np.ndarray
    importance: np.ndarray
    pinned: np.ndarray
    updated: np.ndarray
    day: np.ndarray
    event_start: np.ndarray
    """First day (YYYYMMDD, 0 when none) of the dates the summary mentions."""
    event_end: np.ndarray
    created: np.ndarray
    """`created_at` as a POSIX timestamp."""
    budgeted: np.ndarray
    """Whether the memory counts against the write budget (`write_budget.spends`)."""
    context_norm: np.ndarray
    """|embedding + context| of a memory stored with its conversation's vector
    (`Memory.context_b64`), 0 for one without."""

    @property
    def episodic(self) -> np.ndarray:
        """Rows of episodic memories (from `type`)."""
        return self.type == MEMORY_TYPE_CODES["episodic"]


MEMORY_TYPE_CODES: dict[str, int] = {name: code for code, name in enumerate(get_args(MemoryType))}
"""The `type` column's code of each memory type."""
_COLUMN_TYPES = {"visible": np.bool_, "archived": np.bool_, "replaced": np.bool_,
                 "type": np.int8, "category": np.int32,
                 "importance": np.int8, "pinned": np.bool_, "updated": np.float64, "day": np.int32,
                 "event_start": np.int32, "event_end": np.int32, "created": np.float64,
                 "budgeted": np.bool_, "context_norm": np.float32}


@dataclass
class UserIndex:
    """Memories of one user with their embeddings as one matrix (rows aligned with `ids`).

    Rows live in buffers that grow by a quarter when full, so building an index of n memories
    copies O(n) rows rather than O(n^2) (`np.vstack` per upsert). Beside each vector the row keeps the
    columns a query filters on (`Columns`); categories are stored as codes of `category_codes`.

    A `related_to` edge is stored once, in the document of the memory that made it (linking
    rewrote every neighbour's document and audit list: most of a candidate's table writes).
    The index keeps the other direction (`_incoming`) and serves each memory in `docs` with
    both: its own edges and those pointing at it (its own strength wins where both exist). The
    served document is made when read (`ServedDocs`): holding one for every memory with
    incoming edges doubled the RAM of most linked memories (a pydantic copy, ~1.2 KB).

    `lexical` is the BM25 index over the same rows' summaries, entities and days said
    (`lexical_text`; active and archived memories only), kept in
    step by `upsert` and `update_doc` at no cost to the write path (a write records the text;
    the next query applies the change in place: `streams.memory.lexical_index`).
    """

    dim: int
    ids: list[str] = field(default_factory=list)
    category_codes: dict[str, int] = field(default_factory=dict)
    _buffer: np.ndarray | None = None
    _columns: dict[str, np.ndarray] = field(default_factory=dict)
    _rows: dict[str, int] = field(default_factory=dict)
    _stored: dict[str, Memory] = field(default_factory=dict)
    """The documents as stored (own edges only)."""
    _incoming: dict[str, dict[str, float]] = field(default_factory=dict)
    """memory id -> {id of a memory with an edge to it: strength}."""
    _keyed: dict[str, dict[str, None]] = field(default_factory=dict)
    """entity key -> ids of the visible memories with that key."""
    lexical: LexicalIndex = field(default_factory=LexicalIndex)
    _query_buffer: np.ndarray | None = None
    """The rows a query searches by: normalise(embedding + context) for a memory stored with
    its conversation's vector (`Memory.context_b64`, `streams.write.contextual`), else the
    embedding. The write side (dedup, forget, links) searches the embeddings alone."""

    @property
    def docs(self) -> ServedDocs:
        """memory id -> the document as served (with the edges pointing at it), in the order
        the memories were first stored."""
        return ServedDocs(self)

    @property
    def _matrix(self) -> np.ndarray | None:
        return None if self._buffer is None else self._buffer[: len(self.ids)]

    def upsert(self, memory: Memory, vector: np.ndarray) -> None:
        """Index `memory` by `vector` (its embedding), and queries by that plus its
        `context_b64` when it has one."""
        context = decode_sized(memory.context_b64, self.dim)
        self._set_doc(memory)
        row = self._rows.get(memory.id)
        vec = as_stored(vector).reshape(self.dim)  # what a rebuild from the documents holds
        if row is None:
            row = self._rows[memory.id] = len(self.ids)
            self.ids.append(memory.id)
            if self._buffer is None or row >= len(self._buffer):
                self._grow(max(16, row + row // 4), used=row)
        assert self._buffer is not None and self._query_buffer is not None
        self._buffer[row] = vec
        self._write_columns(row, memory)
        query, norm = vec, 0.0
        if context is not None:
            mixed = vec + context
            norm = float(np.linalg.norm(mixed))
            query = mixed / norm if norm > 0 else vec
        self._query_buffer[row] = query
        self._columns["context_norm"][row] = norm
        self._write_lexical(row, memory)

    def _grow(self, capacity: int, used: int) -> None:
        grown = np.zeros((capacity, self.dim), dtype=np.float32)
        grown_query = np.zeros((capacity, self.dim), dtype=np.float32)
        if self._buffer is not None and self._query_buffer is not None:
            grown[:used] = self._buffer[:used]
            grown_query[:used] = self._query_buffer[:used]
        self._buffer, self._query_buffer = grown, grown_query
        for name, dtype in _COLUMN_TYPES.items():
            column = np.zeros(capacity, dtype=dtype)
            if name in self._columns:
                column[:used] = self._columns[name][:used]
            self._columns[name] = column

    def fit(self) -> None:
        """Shrink the buffers to the rows in use: a rebuilt index has no growth to expect yet,
        and the slack of growing by a quarter is ~1/8 of the vectors' RAM on average."""
        n = len(self.ids)
        if self._buffer is None or len(self._buffer) == n:
            return
        self._buffer = self._buffer[:n].copy()
        if self._query_buffer is not None:
            self._query_buffer = self._query_buffer[:n].copy()
        for name, column in self._columns.items():
            self._columns[name] = column[:n].copy()

    def _write_columns(self, row: int, memory: Memory) -> None:
        code = self.category_codes.setdefault(memory.category.casefold(), len(self.category_codes))
        values = {"visible": memory.is_visible, "archived": memory.is_archived,
                  "replaced": memory.superseded_by is not None,
                  "type": MEMORY_TYPE_CODES[memory.type],
                  "category": code, "importance": memory.importance, "pinned": memory.pinned,
                  "updated": memory.updated_at.timestamp(), "day": _day(memory.date_iso),
                  "event_start": _day(memory.event_start and memory.event_start.isoformat()),
                  "event_end": _day(memory.event_end and memory.event_end.isoformat()),
                  "created": memory.created_at.timestamp(), "budgeted": write_budget.spends(memory)}
        for name, value in values.items():
            self._columns[name][row] = value

    def update_doc(self, memory: Memory) -> None:
        """Replace the document of a memory whose summary (so vector) did not change."""
        self._set_doc(memory)
        row = self._rows.get(memory.id)
        if row is not None:
            self._write_columns(row, memory)
            self._write_lexical(row, memory)

    def _write_lexical(self, row: int, memory: Memory) -> None:
        """Keep the BM25 index in step: only searchable memories are in it, active and archived
        (the cold tier is searched too); a no-op, nothing recorded, when neither the indexed
        text nor the state changed, as on a read."""
        if memory.is_visible or memory.is_archived:
            self.lexical.put(row, lexical_text(memory))
        else:
            self.lexical.discard(row)

    def row(self, memory_id: str) -> int | None:
        """The row of a memory (aligned with `similarities` and `columns`), None if absent."""
        return self._rows.get(memory_id)

    def lexical_scores(self, text: str) -> np.ndarray:
        """BM25 score of every row for `text` (0 for rows not visible or without a match)."""
        return self.lexical.scores(text, len(self.ids))

    def _set_doc(self, memory: Memory) -> None:
        """Store a document as written and update the incoming edges its own edges make. The
        document is kept without its `embedding_b64` and `context_b64`: the vectors are in the
        matrices already (`vector_b64`, `context_b64`)."""
        if memory.embedding_b64 is not None or memory.context_b64 is not None:
            memory = memory.model_copy(update={"embedding_b64": None, "context_b64": None})
        memory = compact(memory)
        before = self._stored.get(memory.id)
        edges_before = before.relations if before is not None else {}
        self._stored[memory.id] = memory
        if before is not None and before.entity_key:
            self._keyed.get(before.entity_key, {}).pop(memory.id, None)
        if memory.entity_key and memory.is_visible:
            self._keyed.setdefault(memory.entity_key, {})[memory.id] = None
        for other in edges_before.keys() - memory.relations.keys():
            self._incoming.get(other, {}).pop(memory.id, None)
        for other, strength in memory.relations.items():
            if edges_before.get(other) != strength:
                self._incoming.setdefault(other, {})[memory.id] = strength

    def served(self, memory_id: str) -> Memory:
        """The stored document of `memory_id` with its incoming edges added (KeyError if
        absent): the stored object itself when nothing points at it."""
        stored = self._stored[memory_id]
        incoming = {k: v for k, v in self._incoming.get(memory_id, {}).items()
                    if k not in stored.relations}
        if not incoming:
            return stored
        return stored.model_copy(update={
            "relations": {**stored.relations, **incoming},
            "related_ids": sorted({*stored.related_ids, *incoming})})

    def stored(self, memory_id: str) -> Memory | None:
        """The document of `memory_id` as stored (own edges only), None if absent."""
        return self._stored.get(memory_id)

    def stored_docs(self) -> list[Memory]:
        """The documents as stored (own edges only, no incoming ones merged), in `docs` order:
        what a pass that rewrites memories must start from, or it would store its neighbours'
        edges as its own."""
        return list(self._stored.values())

    def with_entity_key(self, matches: Callable[[str], bool]) -> list[Memory]:
        """The visible memories whose entity key `matches`, as stored (the write side changes
        them), in the order first stored: a loop over the distinct keys, not every memory."""
        ids = [i for key, keyed in self._keyed.items() if keyed and matches(key) for i in keyed]
        last = len(self.ids)  # rows are in the order memories were first stored
        return [self._stored[i] for i in sorted(ids, key=lambda i: self._rows.get(i, last))]

    def vector_b64(self, memory_id: str) -> str | None:
        """A memory's vector as its document stores it (`embedding_b64`); None if it has none."""
        row = self._rows.get(memory_id)
        return None if row is None or self._buffer is None else encode_vector(self._buffer[row])

    def context_b64(self, memory_id: str) -> str | None:
        """A memory's context vector as its document stores it (`context_b64`), taken back
        out of its query row; None if it has none."""
        row = self._rows.get(memory_id)
        if row is None or self._buffer is None or self._query_buffer is None:
            return None
        norm = float(self._columns["context_norm"][row])
        if norm <= 0:
            return None
        return encode_context_vector(self._query_buffer[row] * norm - self._buffer[row])

    def columns(self) -> Columns:
        """The filter columns of the current rows (views, not copies)."""
        n = len(self.ids)
        if not n:
            empty = {name: np.zeros(0, dtype=dtype) for name, dtype in _COLUMN_TYPES.items()}
            return Columns(**empty)
        return Columns(**{name: column[:n] for name, column in self._columns.items()})

    def count_created(self, after: datetime, until: datetime) -> int:
        """How many memories that count against the write budget were created in
        (`after`, `until`]."""
        n = len(self.ids)
        if not n:
            return 0
        created = self._columns["created"][:n]
        return int(np.count_nonzero(self._columns["budgeted"][:n] & (created > after.timestamp())
                                    & (created <= until.timestamp())))

    def vectors(self, rows: Sequence[int | None]) -> np.ndarray:
        """The vectors at `rows` (one per row, in order; zeros for None: a memory not indexed)."""
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        matrix = self._matrix
        if matrix is not None:
            for i, row in enumerate(rows):
                if row is not None:
                    out[i] = matrix[row]
        return out

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine of every row to `query` (rows and query are L2-normalised)."""
        matrix = self._matrix
        if matrix is None:
            return np.zeros(0, dtype=np.float32)
        return matrix @ np.asarray(query, dtype=np.float32)

    def query_similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine of every row's query vector (`_query_buffer`) to `query`: what a memory query
        ranks by; the write side uses `similarities`."""
        if self._query_buffer is None:
            return np.zeros(0, dtype=np.float32)
        return self._query_buffer[: len(self.ids)] @ np.asarray(query, dtype=np.float32)

    def best(self, scores: np.ndarray, mask: np.ndarray, k: int,
             accept: Callable[[Memory], bool] | None = None,
             served: bool = True) -> list[tuple[Memory, float]]:
        """Top-k (memory, score) among rows in `mask` that `accept` (when given) takes.

        Sorts only the best few rows (`argpartition`) and falls back to a full sort when
        `accept` turns too many of them down. `accept` sees the stored document (without the
        edges pointing at it); the hits are served ones, or the stored ones when not `served`.
        """
        rows = np.flatnonzero(mask)
        candidates = -scores[rows]
        take = min(rows.size, k if accept is None else 4 * k)
        while True:
            if take < rows.size:
                best = np.argpartition(candidates, take - 1)[:take]
                order = best[np.argsort(candidates[best], kind="stable")]
            else:
                order = np.argsort(candidates, kind="stable")
            out: list[tuple[Memory, float]] = []
            for row in rows[order]:
                memory_id = self.ids[row]  # `accept` reads the stored document: no copy made
                if accept is None or accept(self._stored[memory_id]):
                    doc = self.served(memory_id) if served else self._stored[memory_id]
                    out.append((doc, float(scores[row])))
                    if len(out) >= k:
                        return out
            if take >= rows.size:
                return out
            take = rows.size

    def search(self, query: np.ndarray, k: int, memory_type: MemoryType | None = None,
               ) -> list[tuple[Memory, float]]:
        """Top-k (memory, cosine) among the active memories (of `memory_type` when given), best
        first, as stored (own edges only): the write side's search, whose hits may be changed
        and stored again (a served document would store its neighbours' edges as its own).
        The state and type are read from the rows' columns: most of a user's memories may be
        archived, and reading each document to pass them over was most of a search."""
        n = len(self.ids)
        if not n:
            return []
        mask = self._columns["visible"][:n]
        if memory_type is not None:
            mask = mask & (self._columns["type"][:n] == MEMORY_TYPE_CODES[memory_type])
        return self.best(self.similarities(query), mask, k, served=False)

    def __len__(self) -> int:
        return len(self.ids)


class ServedDocs(Mapping[str, Memory]):
    """`UserIndex.docs`: a read-only view whose values are made when read (`UserIndex.served`)."""

    __slots__ = ("_index",)

    def __init__(self, index: UserIndex) -> None:
        self._index = index

    def __getitem__(self, memory_id: str) -> Memory:
        return self._index.served(memory_id)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._index._stored

    def __iter__(self) -> Iterator[str]:
        return iter(self._index._stored)

    def __len__(self) -> int:
        return len(self._index._stored)


class VectorIndex:
    """Per-user indexes, keyed by user id."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._users: dict[str, UserIndex] = {}

    def user(self, user_id: str) -> UserIndex:
        index = self._users.get(user_id)
        if index is None:
            index = self._users[user_id] = UserIndex(self.dim)
        return index

    def users(self) -> dict[str, UserIndex]:
        """The per-user indexes, by user id (the live mapping)."""
        return self._users

    def clear(self) -> None:
        self._users.clear()

    def drop_user(self, user_id: str) -> None:
        self._users.pop(user_id, None)

    def rebuild(self, memories: Iterable[Memory]) -> int:
        """Replace the whole index with `memories` (those with an embedding); return the count."""
        self.clear()
        return sum(self.add(memory) for memory in memories)

    def add(self, memory: Memory, vector: np.ndarray | None = None) -> bool:
        """Index a stored memory by `vector`, else the one in its document; False when it has
        none (or one of another embedder's size, never searchable here). A purge's tombstone,
        which has none, is indexed by a zero vector: listed like the other memories of its
        user (the registry shows it), never similar to anything."""
        if vector is None:
            if memory.embedding_b64:
                vector = decode_vector(memory.embedding_b64)
            elif memory.state == "purged":
                vector = np.zeros(self.dim, dtype=np.float32)
            else:
                return False
        if vector.size != self.dim:
            log.warning("memory %s has a %d-d vector, the index is %d-d; skipped",
                        memory.id, vector.size, self.dim)
            return False
        self.user(memory.user_id).upsert(memory, vector)
        return True
