"""Fixtures of the lifecycle pass tests: a `MemoryState` over sealed dict tables (as the memory
tests build it) with the real MiniLM embedder, and memories made through the real candidate
path (`state.apply`)."""
from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from streams.memory.candidates import apply_candidate
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.memory.vector_index import VectorIndex
from streams.pipeline.tables import stage_tables
from streams.privacy.crypto import new_key
from streams.privacy.sealed import TABLE_OWNERS
from streams.providers.embedders import MINILM_PROFILE
from streams.guarded.llm import GuardedLLM
from tests.unit.providers.conftest import (  # noqa: F401 - fake_api is a fixture
    FakeMessagesAPI,
    Reply,
    fake_api,
    guarded_over,
)
from topics.candidates import Candidate, Fact
from topics.turns import Turn
from tests import defaults

USER = "ana"


def fresh_state() -> MemoryState:
    raw: dict[str, dict[Any, Any]] = {name: {} for name in TABLE_OWNERS}
    tables = stage_tables(raw, {}, new_key()).memory
    return MemoryState(tables, VectorIndex(MINILM_PROFILE.dim),
                       defaults.dedup(MINILM_PROFILE))


class Memories:
    """Writes facts through `state.apply` with the real embedder, one turn each."""

    def __init__(self, state: MemoryState, embedder: Any) -> None:
        self.state = state
        self.embedder = embedder
        self.n = 0

    def vector(self, text: str) -> np.ndarray:
        return self.embedder.embed([text])[0]

    async def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed(list(texts))

    def add(self, summary: str, ts: datetime, *, type: str = "episodic",
            thread: str = "t1", **fact: Any) -> Memory:
        self.n += 1
        turn = Turn(user_id=USER, thread_id=thread, turn_id=str(self.n), role="user",
                    speaker="Ana", text=summary, ts=ts)  # type: ignore[arg-type]
        if type == "episodic":
            fact = {"category": "Conversation_Summary", "tags": ["episode"], **fact}
        candidate = Candidate(turn=turn, fact=Fact(type=type, summary=summary, **fact),  # type: ignore[arg-type]
                              fact_index=0, fact_count=1, confidence=0.9)
        applied = apply_candidate(self.state, candidate, self.vector(summary))
        memory = self.state.memory(applied.memory_id)
        assert memory is not None
        return memory


@pytest.fixture
def memories(minilm_embedder: Any) -> Memories:
    return Memories(fresh_state(), minilm_embedder)


def day(n: int, hour: int = 10) -> datetime:
    """Day `n` of May 2024 (event time)."""
    return datetime(2024, 5, 1, hour, tzinfo=UTC) + timedelta(days=n - 1)




def snapshot(state: MemoryState) -> tuple[dict[Any, Any], ...]:
    t = state.tables
    return dict(t.memories), dict(t.users), dict(t.thread_revs), dict(t.audit)



@pytest.fixture
async def fake_llm(fake_api: FakeMessagesAPI) -> AsyncIterator[GuardedLLM]:
    """A GuardedLLM over the local fake of the Messages API (`fake_api` scripts its answers)."""
    async with guarded_over(fake_api, llm_lifecycle_budget_ms=600_000) as llm:
        yield llm
