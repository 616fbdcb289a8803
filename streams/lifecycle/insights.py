"""Theory-of-mind insights (seed 001 §3): latent, durable observations about the user (trust,
emotions, style, how preferences evolve), asked of the LLM in the background.

Only with an LLM configured (with none the pass does nothing), at most once per
`interval` (24 h) of event time per user, and only when something new happened since the
last run. The model reads the latest activity (≤ 5 episodes or consolidated memories), the
new semantic facts (≤ 3) and a short snippet (≤ 1,000 chars of the newest summaries) and
answers 1–3 insights (`streams.providers.llm.schemas.InsightOutput`: third person, ≤ 280
chars, nothing about the AI). Each becomes a memory of type `insight`, category
`Relationship_Dynamic`, importance 2 by default, never pinned, linked to what it was drawn
from and carrying its provenance; ranking gives insights a low weight
(`streams.read.ranking.type_adjustment`). An empty or failed answer creates nothing; the run
still counts, so a failing model is asked once a day, not once a turn.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from streams.settings import LifecycleSettings
from streams.lifecycle.pass_kit import (
    ACTOR,
    Embed,
    day_of,
    lifecycle_id,
    merged_refs,
    pass_state,
    save_pass_state,
    thread_of,
    vector_for,
    vectors_of,
    visible,
)
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.providers.llm.base import Task
from streams.guarded.llm import GuardedLLM
from streams.providers.llm.schemas import InsightOutput
from streams.write.policy import redact
from streams.write.write_policy import WritePolicy, count
from topics.events import MemoryEvent

CATEGORY = "Relationship_Dynamic"
SNIPPET_CHARS = 1000
MAX_REFS = 20


@dataclass(frozen=True)
class InsightConfig:
    """How often an insight is sought and from how much (`of` the settings)."""

    interval: timedelta
    activity_items: int
    semantic_items: int

    @classmethod
    def of(cls, lifecycle: LifecycleSettings) -> InsightConfig:
        return cls(interval=timedelta(hours=lifecycle.insight_interval_hours),
                   activity_items=lifecycle.insight_activity_items,
                   semantic_items=lifecycle.insight_semantic_items)


def _item(memory: Memory) -> dict[str, str]:
    return {"date": day_of(memory), "summary": redact(memory.summary)}


def insight_input(activity: list[Memory], semantic: list[Memory]) -> str:
    """The data half of the prompt: activity, new facts and a snippet of the newest summaries."""
    newest = sorted([*activity, *semantic], key=lambda m: m.updated_at, reverse=True)
    snippet = " ".join(redact(m.summary) for m in newest)[:SNIPPET_CHARS]
    return json.dumps({"activity": [_item(m) for m in activity],
                       "semantic": [_item(m) for m in semantic], "snippet": snippet},
                      ensure_ascii=False)


class InsightPass:
    """The `insights` lifecycle pass (see the module doc). `embed` embeds each insight (the
    centroid of its sources when None)."""

    name = "insights"

    def __init__(self, llm: GuardedLLM | None, config: InsightConfig | None = None,
                 embed: Embed | None = None, policy: WritePolicy | None = None) -> None:
        self.llm = llm
        self.config = config or InsightConfig.of(LifecycleSettings())
        self.embed = embed
        self.policy = policy or WritePolicy()

    async def __call__(self, state: MemoryState, user_id: str, now: datetime) -> list[MemoryEvent]:
        if self.llm is None or not self.llm.configured:
            return []
        cfg = self.config
        info = pass_state(state, user_id, self.name)
        last = datetime.fromisoformat(info["last"]) if info.get("last") else None
        if last is not None and now - last < cfg.interval:
            return []
        since = last or datetime.min.replace(tzinfo=now.tzinfo)

        def recent(types: list[str], limit: int) -> list[Memory]:
            found = [m for m in visible(state, user_id, types)
                     if since < m.updated_at <= now and m.type in types]
            return sorted(found, key=lambda m: (m.updated_at, m.id))[-limit:] if limit else []

        activity = recent(["episodic", "consolidated"], cfg.activity_items)
        semantic = recent(["semantic"], cfg.semantic_items)
        if not activity and not semantic:
            return []  # nothing new: no call, and the next new item may be looked at at once
        save_pass_state(state, user_id, self.name, {"last": now.isoformat()})
        out = await self.llm.ask(Task.insight, insight_input(activity, semantic), InsightOutput)
        if out is None:
            return []
        sources = [*activity, *semantic]
        vectors = vectors_of(state, user_id, sources)
        events = []
        topics = state.blocked_topics(user_id)
        for n, item in enumerate(out.insights):
            # The write policy, as for every memory (`streams.write.write_policy`): an insight
            # drawn from what the user said is no "remember that …", so no consent applies.
            if (reason := self.policy.refusal(item.summary, topics)) is not None:
                count(reason)
                continue
            events.append(await self._store(state, user_id, n, item.summary, item.tags,
                                             item.importance, sources, vectors, now))
        return events

    async def _store(self, state: MemoryState, user_id: str, n: int, summary: str,
                     tags: list[str], importance: int, sources: list[Memory],
                     vectors: np.ndarray, now: datetime) -> MemoryEvent:
        latest = max(sources, key=lambda m: m.updated_at)
        memory = Memory(
            id=lifecycle_id("insight", user_id, now.isoformat(), str(n)), user_id=user_id,
            type="insight", category=CATEGORY, summary=summary,
            tags=list(dict.fromkeys(["insight", *tags]))[:6], importance=importance, pinned=False,
            private=any(m.private for m in sources), created_at=now, updated_at=now,
            last_accessed=now, related_ids=[m.id for m in sources],
            source_turn_ids=merged_refs(sources)[-MAX_REFS:], thread_id=latest.thread_id,
        )
        state.store(memory, await vector_for(summary, vectors, self.embed))
        return state.announce("created", memory, thread_of(memory), now,
                              {"reason": "insight", "from": memory.related_ids}, actor=ACTOR)
