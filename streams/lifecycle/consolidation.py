"""Daily consolidation (seed 000 §4, seed 001 §4): recent episodes of one theme become one
`consolidated` memory; the originals are archived.

Once per event-time day per user: the most recent active conversation episodes (the
after-turn capture's, `streams/write/episodic.py`; a dated fact such as "Ana adopted Luna on
3 May" is a fact about the user, left to promotion, as the query path treats it) within the
lookback are paired by embedding cosine, only within the time window; the best pairs are
checked first, at
most `max_pairs` per run, and a pair checked without being merged gets a fingerprint
`(id_a, id_b, round(score, 2))` so it is not checked again for `fingerprint_days`. Pairs join
clusters (single link) while a cluster stays within the window and under its size cap. Each
cluster of two or more becomes one memory of type `consolidated`: 1–3 sentences with dates,
actors and outcome, written by the LLM when one is configured and by rules otherwise (or when
the LLM fails), with `consolidated_from` = the originals, their provenance merged, importance
their max, and `last_accessed` = now (seed 000 §4). Events: `consolidated` for the new memory,
`archived` for each original. An episode that continues the theme of a consolidated memory
of the window (made on an earlier day) joins it: a new consolidated memory of all the episodes
replaces it (archived, reason `reconsolidated`).
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from streams.settings import LifecycleSettings
from streams.lifecycle.pass_kit import (
    is_episode,
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
from streams.providers.llm.schemas import ConsolidationOutput
from streams.write.policy import redact
from streams.write.write_policy import WritePolicy, count
from streams.write.writing import MAX_CHARS, normalise_summary, split_summary_sentences, trim_to
from topics.events import MemoryEvent

MAX_TAGS = 8


@dataclass(frozen=True)
class ConsolidationConfig:
    """Which memories are merged into one, and how much a run does (`of` the settings)."""

    window: timedelta
    lookback: timedelta
    min_similarity: float
    max_candidates: int
    max_pairs: int
    max_clusters: int
    max_cluster_size: int
    fingerprint_ttl: timedelta

    @classmethod
    def of(cls, lifecycle: LifecycleSettings) -> ConsolidationConfig:
        return cls(
            window=timedelta(days=lifecycle.consolidation_window_days),
            lookback=timedelta(days=lifecycle.consolidation_lookback_days),
            min_similarity=lifecycle.consolidation_min_similarity,
            max_candidates=lifecycle.consolidation_max_candidates,
            max_pairs=lifecycle.consolidation_max_pairs,
            max_clusters=lifecycle.consolidation_max_clusters,
            max_cluster_size=lifecycle.consolidation_max_cluster_size,
            fingerprint_ttl=timedelta(days=lifecycle.consolidation_fingerprint_days),
        )


def fingerprint(a: str, b: str, score: float) -> str:
    """The pair hash of seed 001 §4: `(id_a, id_b, round(score, 2))`, ids in order."""
    first, second = sorted((a, b))
    return json.dumps([first, second, round(score, 2)], separators=(",", ":"))


def span_start(memory: Memory) -> datetime:
    """When what a memory covers began: a consolidated memory's first episode, else its own
    time."""
    return memory.valid_from or memory.created_at if memory.type == "consolidated" else memory.created_at


class _Clusters:
    """Single-link clusters that never span more than `window` nor exceed `max_size`."""

    def __init__(self, memories: list[Memory], window: timedelta, max_size: int) -> None:
        self.memories = memories
        self.window = window
        self.max_size = max_size
        self.parent = list(range(len(memories)))

    def root(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def members(self, root: int) -> list[int]:
        return [i for i in range(len(self.memories)) if self.root(i) == root]

    def join(self, i: int, j: int) -> bool:
        """Join the clusters of i and j if the result stays within bounds; whether they are
        now one cluster."""
        ri, rj = self.root(i), self.root(j)
        if ri == rj:
            return True
        both = self.members(ri) + self.members(rj)
        starts = [span_start(self.memories[k]) for k in both]
        ends = [self.memories[k].created_at for k in both]
        if len(both) > self.max_size or max(ends) - min(starts) > self.window:
            return False
        self.parent[rj] = ri
        return True

    def groups(self) -> list[list[int]]:
        by_root: dict[int, list[int]] = {}
        for i in range(len(self.memories)):
            by_root.setdefault(self.root(i), []).append(i)
        return [g for g in by_root.values() if len(g) > 1]


_DATE_PREFIX = re.compile(r"^On \d{4}-\d{2}-\d{2}(?: \(W\d{1,2}, \d{4}\))?,?\s*", re.I)


def _core(summary: str) -> str:
    """An episode's summary as one sentence without its leading date (the consolidated one
    states the dates) nor its final period; of a captured episode, its approach (the topics
    are the head's "involving …")."""
    text = _DATE_PREFIX.sub("", summary.strip())
    topic, approach, rest = text.partition("Approach:")
    if approach and rest.strip():  # the capture's "we discussed X. Approach: Y": Y is the outcome
        text = rest.strip()
    parts = [p.rstrip(". ") for p in split_summary_sentences(text)]
    text = "; ".join([*parts[:1], *(p[:1].lower() + p[1:] for p in parts[1:])])  # one sentence
    return text[:1].upper() + text[1:] if text else text


def rules_summary(members: list[Memory]) -> str:
    """1–3 sentences with the dates, the actors and the outcome, by rules: the span and who
    took part, then what each episode was about (evenly trimmed to fit), the last one — where
    the outcome is — introduced by "Finally"."""
    first_day, last_day = day_of(members[0]), day_of(members[-1])
    when = f"On {first_day}" if first_day == last_day else f"Between {first_day} and {last_day}"
    actors = [e for e, _ in Counter(e for m in members for e in m.entities).most_common(3)]
    head = f"{when}, {len(members)} related episodes" + (
        f" involving {', '.join(actors)}" if actors else "") + "."
    cores = list(dict.fromkeys(_core(m.summary) for m in members))
    last = cores.pop() if len(cores) > 1 else None
    joiners = len(cores) * 2 + (len(" Finally, .") if last else 1)
    share = max((MAX_CHARS - len(head) - joiners) // (len(cores) + (last is not None)), 12)
    middle = "; ".join(trim_to(c, share) for c in cores)
    body = f" {middle}." + (f" Finally, {trim_to(last[:1].lower() + last[1:], share)}." if last else "")
    return normalise_summary(head + body, MAX_CHARS, max_sentences=3)


def _llm_input(members: list[Memory]) -> str:
    return json.dumps({"user": "", "episodes": [
        {"date": day_of(m), "summary": redact(m.summary)} for m in members]}, ensure_ascii=False)


class ConsolidationPass:
    """The `consolidation` lifecycle pass (see the module doc). `llm`: the guarded LLM (rules
    when None or unconfigured); `embed`: embeds the new summary (the originals' centroid is its
    vector when None)."""

    name = "consolidation"

    def __init__(self, config: ConsolidationConfig | None = None,
                 llm: GuardedLLM | None = None, embed: Embed | None = None,
                 policy: WritePolicy | None = None) -> None:
        self.config = config or ConsolidationConfig.of(LifecycleSettings())
        self.llm = llm
        self.embed = embed
        self.policy = policy or WritePolicy()

    async def __call__(self, state: MemoryState, user_id: str, now: datetime) -> list[MemoryEvent]:
        info = pass_state(state, user_id, self.name)
        today = now.date().isoformat()
        if info.get("day") == today:
            return []  # once per event-time day
        cfg = self.config
        seen = {fp: datetime.fromisoformat(at) for fp, at in (info.get("fingerprints") or {}).items()
                if now - datetime.fromisoformat(at) < cfg.fingerprint_ttl}
        episodes = sorted(
            (m for m in visible(state, user_id, ["episodic", "consolidated"])
             if (is_episode(m) or m.type == "consolidated") and not m.pinned
             and now - cfg.lookback <= m.created_at <= now),
            key=lambda m: (m.created_at, m.id))[-cfg.max_candidates:]
        events: list[MemoryEvent] = []
        if len(episodes) >= 2:
            vectors = vectors_of(state, user_id, episodes)
            clusters, rejected = self._cluster(episodes, vectors, seen)
            for group in clusters.groups()[:cfg.max_clusters]:  # the rest waits for tomorrow
                group = sorted(group, key=lambda i: (episodes[i].created_at, i))
                events += await self._consolidate(state, [episodes[i] for i in group],
                                                  vectors[group], now)
            seen.update({fp: now for fp in rejected})
        info = {"day": today, "fingerprints": {fp: at.isoformat() for fp, at in sorted(seen.items())}}
        save_pass_state(state, user_id, self.name, info)
        return events

    def _cluster(self, episodes: list[Memory], vectors: np.ndarray,
                 seen: dict[str, datetime]) -> tuple[_Clusters, list[str]]:
        """Clusters of the best pairs within the window, and the fingerprints of the pairs
        checked but not joined (the cluster would outgrow the window or the size cap): those
        are not checked again for `fingerprint_ttl`. Joined pairs need none: their episodes
        are archived, or their cluster is made on a later day when the run's cap left it."""
        cfg = self.config
        sims = vectors @ vectors.T
        pairs = []
        for i in range(len(episodes)):
            for j in range(i + 1, len(episodes)):
                if episodes[j].created_at - episodes[i].created_at > cfg.window:
                    break  # sorted by time: every later j is further away
                if sims[i, j] >= cfg.min_similarity:
                    pairs.append((float(sims[i, j]), i, j))
        pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
        clusters = _Clusters(episodes, cfg.window, cfg.max_cluster_size)
        rejected: list[str] = []
        checked = 0
        for score, i, j in pairs:
            fp = fingerprint(episodes[i].id, episodes[j].id, score)
            if fp in seen:
                continue
            if checked >= cfg.max_pairs:
                break
            checked += 1
            if not clusters.join(i, j):
                rejected.append(fp)
        return clusters, rejected

    async def _summary(self, members: list[Memory], topics: list[str]) -> tuple[str | None, str]:
        """(summary, "llm" | "rules"); the summary is None when the write policy refuses the
        rules' too (a secret, a blocked topic, sensitive data: `streams.write.write_policy`).
        A member that is sensitive with the user's consent does not lend its consent to the
        summary: a consolidated memory is nobody's "remember that …"."""
        if self.llm is not None and self.llm.configured:
            out = await self.llm.ask(Task.consolidate, _llm_input(members), ConsolidationOutput)
            if out is not None:
                summary = normalise_summary(out.summary, MAX_CHARS, max_sentences=3)
                reason = self.policy.refusal(summary, topics)
                if reason is None:
                    return summary, "llm"
                count(reason)
        summary = rules_summary(members)
        reason = self.policy.refusal(summary, topics)
        if reason is not None:
            count(reason)
            return None, "rules"
        return summary, "rules"

    async def _consolidate(self, state: MemoryState, members: list[Memory], vectors: np.ndarray,
                           now: datetime) -> list[MemoryEvent]:
        """One consolidated memory of `members`, and the members archived. A member that is a
        consolidated memory already (yesterday's, when today's episode continues its theme)
        gives its originals: the new memory is made from every episode, and replaces it."""
        episodes = sorted({e.id: e for m in members for e in self._episodes_of(state, m)}.values(),
                          key=lambda e: (e.created_at, e.id))
        summary, writer = await self._summary(episodes, state.blocked_topics(members[0].user_id))
        if summary is None:
            return []  # refused: the episodes stay as they are
        latest = episodes[-1]
        ids = [m.id for m in episodes]
        category = Counter(m.category for m in episodes).most_common(1)[0][0]
        memory = Memory(
            id=lifecycle_id("consolidated", latest.user_id, *sorted(ids)),
            user_id=latest.user_id, type="consolidated", category=category, summary=summary,
            tags=list(dict.fromkeys(["consolidated", *(t for m in episodes for t in m.tags)]))[:MAX_TAGS],
            entities=list(dict.fromkeys(e for m in episodes for e in m.entities)),
            source=latest.source, trust_score=min(m.trust_score for m in members),
            importance=max(m.importance for m in members),
            valence=latest.valence, intensity=latest.intensity,
            private=any(m.private for m in members),
            created_at=now, updated_at=now, last_accessed=now, valid_from=episodes[0].created_at,
            consolidated_from=ids, source_turn_ids=merged_refs([*episodes, *members]),
            agent_id=latest.agent_id, run_id=latest.run_id, actor_id=latest.actor_id,
            role=latest.role, thread_id=latest.thread_id,
            date_iso=latest.date_iso, week=latest.week, year=latest.year,
        )
        state.store(memory, await vector_for(summary, vectors, self.embed))
        events = [state.announce("consolidated", memory, thread_of(memory), now,
                                 {"consolidated_from": ids, "writer": writer,
                                  "first_day": day_of(episodes[0]), "last_day": day_of(latest)},
                                 actor=ACTOR)]
        for member in members:
            archived = member.model_copy(update={
                "state": "archived", "superseded_by": memory.id, "updated_at": now,
                "version": member.version + 1})
            state.store(archived)
            reason = "reconsolidated" if member.type == "consolidated" else "consolidated"
            events.append(state.announce("archived", archived, thread_of(archived), now,
                                         {"reason": reason, "into": memory.id},
                                         old=member, actor=ACTOR))
        return events

    @staticmethod
    def _episodes_of(state: MemoryState, member: Memory) -> list[Memory]:
        """The episodes a member stands for: itself, or a consolidated memory's originals."""
        if member.type != "consolidated":
            return [member]
        found = [m for m in map(state.memory, member.consolidated_from) if m is not None]
        return found or [member]
