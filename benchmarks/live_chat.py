"""What a replay leaves behind, and a replay as a chat backend runs it (issue 20).

A plain replay writes every turn and never reads, so `last_accessed` never moves and the
lifecycle ages every memory as if nobody ever asked about it. A chat backend queries memory on
every turn: `live_replay` does the same, asking for the `top_k` (`MEMORY_K`) best memories with
the incoming turn as the query (recorded as a read, as the query route records it) before it
sends the turn. The recall of the questions asked afterwards is then the product's, with reads.

`end_state` reports what forgetting is bounding, per user: memories by state (active,
archived, soft-deleted, purged) and the RAM of the user's in-worker index (vectors, filter
columns, documents, BM25), measured by building that index afresh under `tracemalloc`.
"""
from __future__ import annotations

import gc
import tracemalloc
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.crossval import QuestionResults
from streams.tools.locomo import LocomoConversation
from benchmarks.recall import RecallReport
from streams.memory.model import Memory
from streams.memory.vector_index import VectorIndex
from topics.turns import Turn

Ask = Callable[[Turn], Awaitable[None]]
"""Queries memory with a turn's text before the turn is sent (the chat backend's read)."""


def per_conversation(results: QuestionResults, conversations: Sequence[LocomoConversation],
                     files: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """Recall_any and recall_all at each k and the question count, per conversation (by file
    name)."""
    out = {}
    for conv, path in zip(conversations, files):
        report = results.report([conv.user_id]).as_dict()
        out[path.name] = {"recall_any": report["recall_any"], "recall_all": report["recall_all"],
                          "questions": report["questions"]}
    return out


def index_bytes(memories: Sequence[Memory], dim: int) -> int:
    """Bytes the in-worker index of these memories (one user's, with their vectors) holds:
    allocated while a fresh index of them is built, as a worker's rebuild builds it."""
    gc.collect()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = VectorIndex(dim)
        index.rebuild(memories)
        for user_index in index.users().values():
            user_index.fit()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        del index
    finally:
        if started:
            tracemalloc.stop()
    return max(held, 0)


def end_state(stored: dict[str, list[Memory]], names: dict[str, str], dim: int) -> dict[str, Any]:
    """Per user (by conversation name): memories by state and the index's RAM in bytes; and
    the totals. `stored` maps a user id to the user's stored memories (with vectors)."""
    per_user: dict[str, Any] = {}
    totals: Counter[str] = Counter()
    ram = 0
    for user_id, memories in stored.items():
        states = Counter(m.state for m in memories)
        user_ram = index_bytes(memories, dim)
        per_user[names.get(user_id, user_id)] = {"by_state": dict(sorted(states.items())),
                                                 "index_bytes": user_ram}
        totals.update(states)
        ram += user_ram
    return {"per_user": per_user, "by_state": dict(sorted(totals.items())), "index_bytes": ram}


async def live_replay(turns: Sequence[Turn], ask: Ask, send: Callable[[Turn], Awaitable[None]],
                      on_turn: Callable[[], None] = lambda: None) -> int:
    """Send `turns` in order, each after `ask`ing memory with it; the number of queries."""
    asked = 0
    for turn in turns:
        await ask(turn)
        asked += 1
        await send(turn)
        on_turn()
    return asked


def recall_summary(report: RecallReport, queries: int, top_k: int) -> dict[str, Any]:
    """The live replay's figures for the report: recall as the plain replay's, and its reads."""
    data = report.as_dict()
    return {"read_top_k": top_k, "queries": queries, "recall_any": data["recall_any"],
            "recall_all": data["recall_all"], "context_words_mean_at": data["context_words_mean_at"]}
