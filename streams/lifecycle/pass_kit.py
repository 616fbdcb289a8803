"""What the consolidation, promotion and insight passes share: their per-user state, deterministic ids, and reads of a user's memories and vectors.

The contract is the lifecycle runner's (`streams/lifecycle/passes.py`): a pass is called with
the user's `MemoryState`, the user id and the EVENT-TIME watermark `now` (never the wall
clock), changes memories through `state.store`, announces each change with
`state.announce(..., actor="lifecycle")` and returns the events (the runner sends them).
"""
from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import numpy as np

from streams.lifecycle.passes import ACTOR, thread_of  # noqa: F401 - what every pass uses
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.memory.tables import composite_key
from streams.memory.vector_index import decode_vector
from streams.read.query import is_conversation_episode as is_episode  # noqa: F401 - shared

Embed = Callable[[Sequence[str]], Awaitable[np.ndarray]]
"""Embeds texts (L2-normalised rows), e.g. `Services.embed`."""

_NS = uuid.UUID("0f7d2c1a-5b8e-5a4e-8c3d-6c6966656379")  # namespace of lifecycle-made memories


def lifecycle_id(kind: str, user_id: str, *parts: str) -> str:
    """A deterministic memory id for what a pass makes from `parts` (e.g. the originals' ids),
    so a replay of the same history makes the same memory."""
    return str(uuid.uuid5(_NS, composite_key(kind, user_id, *parts)))


def pass_state(state: MemoryState, user_id: str, name: str) -> dict[str, Any]:
    """A copy of the pass's state for the user (`users[user_id][name]`), {} when none."""
    return dict((state.tables.users.get(user_id) or {}).get(name) or {})


def save_pass_state(state: MemoryState, user_id: str, name: str, value: dict[str, Any]) -> None:
    """Write the pass's state back (read-modify-write of the user's record); no write when it
    did not change, so a second run at the same `now` writes nothing."""
    info = dict(state.tables.users.get(user_id) or {})
    if info.get(name) == value:
        return
    info[name] = value
    state.tables.users[user_id] = info


def visible(state: MemoryState, user_id: str, types: Iterable[str]) -> list[Memory]:
    """The user's active memories of `types`, as stored (`UserIndex.stored_docs`: the index
    serves documents with their incoming edges added, and a pass that rewrites a memory must
    start from its own document). Without their vectors, which `state.store` puts back from
    the index; not read again from the table: that opened and validated every document."""
    wanted = set(types)
    return [doc for doc in state.index.user(user_id).stored_docs()
            if doc.is_visible and doc.type in wanted]


def vectors_of(state: MemoryState, user_id: str, memories: Sequence[Memory]) -> np.ndarray:
    """The memories' embeddings as rows (from the index, else their documents)."""
    user_index = state.index.user(user_id)
    rows = []
    for memory in memories:
        data = user_index.vector_b64(memory.id) or memory.embedding_b64
        if data is None:
            raise ValueError(f"memory {memory.id} has no vector")
        rows.append(decode_vector(data))
    return np.vstack(rows) if rows else np.zeros((0, state.index.dim), dtype=np.float32)


def centroid(vectors: np.ndarray) -> np.ndarray:
    """The normalised mean of rows: the vector of a memory made from several when no embedder
    is at hand."""
    mean = vectors.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / norm if norm else mean).astype(np.float32)


async def vector_for(text: str, members: np.ndarray, embed: Embed | None) -> np.ndarray:
    """The vector of a new memory: `text` embedded, or the members' centroid without `embed`."""
    if embed is None:
        return centroid(members)
    return np.asarray((await embed([text]))[0], dtype=np.float32)


def day_of(memory: Memory) -> str:
    """The memory's day (its episodic date when it has one), YYYY-MM-DD."""
    return memory.date_iso or memory.created_at.date().isoformat()


def merged_refs(memories: Iterable[Memory]) -> list[str]:
    """The union of the memories' provenance, in order."""
    return list(dict.fromkeys(ref for m in memories for ref in m.source_turn_ids))

