"""In-worker nearest-neighbour index over the memories of the users a worker owns.

The durable state is the Faust `memories` table (RocksDB + changelog); this index is a cache
rebuilt from it after every recovery, so it never needs its own persistence.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

from streams.memory import Memory


def encode_vector(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode("ascii")


def decode_vector(data: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(data), dtype=np.float32)


@dataclass
class UserIndex:
    """Memories of one user with their embeddings as one matrix (rows aligned with `ids`)."""

    dim: int
    ids: list[str] = field(default_factory=list)
    docs: dict[str, Memory] = field(default_factory=dict)
    _matrix: np.ndarray | None = None
    _rows: dict[str, int] = field(default_factory=dict)

    def upsert(self, memory: Memory, vector: np.ndarray) -> None:
        self.docs[memory.id] = memory
        row = self._rows.get(memory.id)
        vec = np.asarray(vector, dtype=np.float32).reshape(1, self.dim)
        if row is None:
            self._rows[memory.id] = len(self.ids)
            self.ids.append(memory.id)
            self._matrix = vec if self._matrix is None else np.vstack([self._matrix, vec])
        else:
            assert self._matrix is not None
            self._matrix[row] = vec[0]

    def update_doc(self, memory: Memory) -> None:
        """Replace the document of a memory whose summary (so vector) did not change."""
        self.docs[memory.id] = memory

    def search(
        self, query: np.ndarray, k: int, accept: Callable[[Memory], bool] = lambda m: m.is_visible
    ) -> list[tuple[Memory, float]]:
        """Top-k (memory, cosine) among accepted memories, best first."""
        if self._matrix is None or not self.ids:
            return []
        scores = self._matrix @ np.asarray(query, dtype=np.float32)
        order = np.argsort(-scores)
        out: list[tuple[Memory, float]] = []
        for row in order:
            doc = self.docs[self.ids[row]]
            if accept(doc):
                out.append((doc, float(scores[row])))
                if len(out) >= k:
                    break
        return out

    def __len__(self) -> int:
        return len(self.ids)


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

    def clear(self) -> None:
        self._users.clear()

    def drop_user(self, user_id: str) -> None:
        self._users.pop(user_id, None)

    def rebuild(self, memories: Iterable[Memory]) -> int:
        """Replace the whole index with `memories` (those with an embedding); return the count."""
        self.clear()
        count = 0
        for memory in memories:
            if memory.embedding_b64:
                self.user(memory.user_id).upsert(memory, decode_vector(memory.embedding_b64))
                count += 1
        return count
