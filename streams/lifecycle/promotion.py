"""Promotion (seed 000 §7): a fact the user's episodes repeat becomes a semantic memory.

Among the user's active episodic facts of the last `window` (60 days; not the conversation
episodes of the after-turn capture, which consolidation is for), a fact mentioned at least
`min_repeats` (3) times — distinct source turns of memories whose embeddings are within
`min_similarity` of one another — with a mean trust of at least `min_trust`, becomes one memory
of type `semantic`: the most central mention's text with its date taken out, linked to every
mention (`related_ids` and `relations`, strength = cosine), their provenance merged, event kind
`promoted`. Its confidence is the mentions' cohesion (mean cosine to the central one), raised a
little by each mention beyond the minimum; below `review_below` (0.9) it is tagged
`needs_review` (tag `REVIEW_TAG`, and `needs_review` in the event's meta) for a human to check.

A **pattern** is promoted too (seed 000 §7: "when a tag/fact repeats"): episodes on at least
two days that share a topic word (a stem of their tags, the statement-kind tags left out), say
three pottery classes or four LGBTQ events, with `min_repeats` mentions, when the word is
topical: its episodes are closer to one another than to the user's other episodes by
`pattern_lift` (a word like "went" or "photo" is shared by unrelated episodes). Its memory lists the mentions, with their
dates, under the topic ("Recurring, pottery (3 times, 2023-07-03 to …): …"), is tagged `pattern`
and the topic word, and links every mention. A cohesion under `review_below` asks for review.

A promotion never goes against a pinned or user-set fact: when an active semantic memory with
the same entity key, or one as close as the dedup check band, already exists, the fact is
known already (or the user's own version wins) and nothing is promoted. The mentions stay
episodic (consolidation may merge them later); the pass remembers them so they are promoted
once.
"""
from __future__ import annotations

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
from streams.memory.lexical_index import tokenize
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.language.signals import SIGNAL_TAGS
from streams.write.writing import MAX_CHARS, normalise_summary
from topics.events import MemoryEvent

PROMOTED_TAG = "promoted"
REVIEW_TAG = "needs_review"
PATTERN_TAG = "pattern"
USER_SET_TAG = "explicit"
"""Tag of a fact the user stated with "remember …" (`streams.write.extraction`): user-set."""


@dataclass(frozen=True)
class PromotionConfig:
    """When repeated episodes become a fact; the settings' values come from `of`."""

    min_repeats: int
    window: timedelta
    min_similarity: float
    canonical_similarity: float
    min_trust: float
    review_below: float
    max_per_run: int
    pattern_lift: float
    pattern_min_days: int = 2
    """Distinct days a pattern's episodes must span (not a setting)."""
    max_candidates: int = 200
    """Most recent episodic facts one run reads (grouping is quadratic in them)."""

    @classmethod
    def of(cls, lifecycle: LifecycleSettings) -> PromotionConfig:
        return cls(min_repeats=lifecycle.promotion_min_repeats,
                   window=timedelta(days=lifecycle.promotion_window_days),
                   min_similarity=lifecycle.promotion_min_similarity,
                   canonical_similarity=lifecycle.promotion_canonical_similarity,
                   min_trust=lifecycle.promotion_min_trust,
                   review_below=lifecycle.promotion_review_below,
                   pattern_lift=lifecycle.promotion_pattern_lift,
                   max_per_run=lifecycle.promotion_max_per_run)


def is_canonical(memory: Memory) -> bool:
    """A fact the user pinned or set in so many words: nothing inferred overrides it."""
    return memory.pinned or USER_SET_TAG in memory.tags


def mentions(members: list[Memory]) -> int:
    """How many times the members' fact was said: their distinct source turns."""
    return len(merged_refs(members))


def mean_trust(members: list[Memory]) -> float:
    """The members' mean trust, rounded (0.7 three times is 0.7, not 0.6999…)."""
    return round(sum(m.trust_score for m in members) / len(members), 6)


_DATE = re.compile(
    r",?\s+(?:on|in|during)\s+(?:the\s+)?(?:\d{4}-\d{2}-\d{2}|\d{1,2}(?:st|nd|rd|th)? [A-Z][a-z]+,? \d{4}"
    r"|[A-Z][a-z]+ \d{1,2}(?:st|nd|rd|th)?,? \d{4}|[A-Z][a-z]+ \d{4})\b")


_LEADING_DATE = re.compile(
    r"^On (?:\d{4}-\d{2}-\d{2}|\d{1,2}(?:st|nd|rd|th)? [A-Z][a-z]+,? \d{4}|[A-Z][a-z]+ \d{1,2}(?:st|nd|rd|th)?,? \d{4})"
    r"(?: \(W\d{1,2}, \d{4}\))?,?\s+")


def rules_summary(central: Memory, members: list[Memory]) -> str:
    """The central mention without its date, saying how often and when it was said."""
    core = _DATE.sub("", _LEADING_DATE.sub("", central.summary.strip())).rstrip(". ")
    core = core[:1].upper() + core[1:]
    days = sorted(day_of(m) for m in members)
    prefix = f"Repeatedly ({mentions(members)} times between {days[0]} and {days[-1]}): "
    return normalise_summary(prefix + core, MAX_CHARS, max_sentences=2)


def topic_terms(memory: Memory) -> dict[str, str]:
    """What the memory is about, from its tags: stem -> the tag it comes from. The
    statement-kind tags (`SIGNAL_TAGS`), the lifecycle's own tags, stopwords and numbers are
    left out."""
    tags = [t for t in memory.tags if t not in SIGNAL_TAGS and t not in _OWN_TAGS and not t.isdigit()]
    return {stem: tag for tag, stems in zip(tags, tokenize(tags)) for stem in stems}


_OWN_TAGS = frozenset((PROMOTED_TAG, REVIEW_TAG, PATTERN_TAG, "over_write_budget"))


def _cohesion(sims: np.ndarray, rows: list[int]) -> float:
    """Mean pairwise cosine of `rows` (at least two) in the similarity matrix `sims`."""
    block = sims[np.ix_(rows, rows)]
    return float((block.sum() - np.trace(block)) / (len(rows) * (len(rows) - 1)))


def _lift(sims: np.ndarray, rows: list[int]) -> float:
    """How much closer the episodes `rows` are to one another than to the other episodes: their
    mean pairwise cosine minus their mean cosine to the rest (-1 when there is no rest, or
    fewer than two rows). Sentences about one person in one style are close whatever they
    say, so raw cohesion cannot tell "went" (0.47 within, 0.41 to the rest) from "pottery"
    (0.79 within, 0.40 to the rest); the lift can."""
    if len(rows) < 2 or len(rows) >= len(sims):  # most words name one episode: no set work
        return -1.0
    others = np.setdiff1d(np.arange(len(sims)), rows)
    return _cohesion(sims, rows) - float(sims[np.ix_(rows, others)].mean())


def pattern_summary(label: str, members: list[Memory]) -> str:
    """The mentions of a pattern in time order, under the topic, as many as fit."""
    ordered = sorted(members, key=lambda m: (m.created_at, m.id))
    days = sorted(day_of(m) for m in members)
    text = f"Recurring, {label} ({mentions(members)} times, {days[0]} to {days[-1]}): "
    items = [m.summary.strip().rstrip(".!? ") for m in ordered]
    for n, item in enumerate(items):
        rest = f"; and {len(items) - n - 1} more" if n < len(items) - 1 else ""
        piece = ("; " if n else "") + item
        if len(text) + len(piece) + len(rest) > MAX_CHARS and n:
            text += f"; and {len(items) - n} more"
            break
        text += piece
    return normalise_summary(text, MAX_CHARS, max_sentences=0)


@dataclass(frozen=True)
class _Group:
    central: int
    members: list[int]
    confidence: float
    label: str | None = None
    """The topic word of a pattern; None for repeats of one fact."""


class PromotionPass:
    """The `promotion` lifecycle pass (see the module doc); `embed` embeds the new summary (the
    central mention's vector is used when None)."""

    name = "promotion"

    def __init__(self, config: PromotionConfig | None = None, embed: Embed | None = None) -> None:
        self.config = config or PromotionConfig.of(LifecycleSettings())
        self.embed = embed

    async def __call__(self, state: MemoryState, user_id: str, now: datetime) -> list[MemoryEvent]:
        cfg = self.config
        info = pass_state(state, user_id, self.name)
        done = {mid: at for mid, at in (info.get("promoted") or {}).items()
                if now - datetime.fromisoformat(at) < cfg.window}
        pool = sorted((m for m in visible(state, user_id, ["episodic"])
                       if not is_episode(m) and m.id not in done
                       and now - cfg.window <= m.created_at <= now),
                      key=lambda m: (m.created_at, m.id))[-cfg.max_candidates:]
        events: list[MemoryEvent] = []
        budget = cfg.max_per_run
        if len(pool) >= 2:
            vectors = vectors_of(state, user_id, pool)
            for group in self._groups(pool, vectors)[:budget]:
                budget -= 1
                events += await self._promote_group(state, pool, vectors, group, now, done)
        history = self._pattern_pool(state, user_id, now)[-cfg.max_candidates:]
        eligible = {i for i, m in enumerate(history)
                    if m.id not in done and now - cfg.window <= m.created_at}
        if budget > 0 and len(eligible) >= cfg.min_repeats:
            vectors = vectors_of(state, user_id, history)
            for group in self._patterns(history, vectors, eligible)[:budget]:
                events += await self._promote_group(state, history, vectors, group, now, done)
        save_pass_state(state, user_id, self.name, {"promoted": dict(sorted(done.items()))})
        return events

    async def _promote_group(self, state: MemoryState, pool: list[Memory], vectors: np.ndarray,
                             group: _Group, now: datetime, done: dict[str, str]) -> list[MemoryEvent]:
        """Promote one group (unless a fact already held wins); its members are done either way."""
        members = [pool[i] for i in group.members]
        event = await self._promote(state, pool[group.central], members, vectors, group, now)
        done.update({m.id: now.isoformat() for m in members})
        return [event] if event is not None else []

    def _pattern_pool(self, state: MemoryState, user_id: str, now: datetime) -> list[Memory]:
        """The user's episodic facts up to `now`, active or archived (an archived original of a
        consolidation still shows what the user did), oldest first; as stored (`pass_kit.visible`)."""
        out = [doc for doc in state.index.user(user_id).stored_docs()
               if doc.type == "episodic" and doc.state in ("active", "archived")
               and not is_episode(doc) and doc.created_at <= now]
        return sorted(out, key=lambda m: (m.created_at, m.id))

    def _patterns(self, pool: list[Memory], vectors: np.ndarray, eligible: set[int]) -> list[_Group]:
        """Patterns (module doc), most mentioned first: each time the topic word whose episodes
        not yet taken are mentioned most (then the most cohesive, then the word), while one
        reaches `min_repeats` mentions on `pattern_min_days` days. Only topical words count:
        those whose episodes (all of them, taken or not) are closer to one another than to the
        user's other episodes by `pattern_lift` (`_lift`). Whether a word is topical is judged on
        all of `pool` (the user's history); the mentions are the `eligible` rows (the window's,
        not promoted yet)."""
        cfg = self.config
        sims = vectors @ vectors.T
        by_term: dict[str, list[int]] = {}
        surface: dict[str, Counter[str]] = {}
        for i, memory in enumerate(pool):
            for term, tag in topic_terms(memory).items():
                by_term.setdefault(term, []).append(i)
                surface.setdefault(term, Counter())[tag] += 1
        topical = {term: rows for term, rows in by_term.items()
                   if _lift(sims, rows) >= cfg.pattern_lift}
        taken: set[int] = set()
        groups: list[_Group] = []
        while True:
            best: tuple[int, float, str, list[int]] | None = None
            for term, rows in sorted(topical.items()):
                members = [i for i in rows if i in eligible and i not in taken]
                if len(members) < 2:
                    continue
                count = mentions([pool[i] for i in members])
                if (count < cfg.min_repeats
                        or len({day_of(pool[i]) for i in members}) < cfg.pattern_min_days):
                    continue
                cohesion = _cohesion(sims, members)
                if best is None or (count, cohesion) > best[:2]:
                    best = (count, cohesion, term, members)
            if best is None:
                return groups
            count, cohesion, term, members = best
            if mean_trust([pool[i] for i in members]) >= cfg.min_trust:
                central = max(members, key=lambda i: (float(sims[i, members].sum()), -i))
                extra = 0.05 * (count - cfg.min_repeats)
                groups.append(_Group(central, members, round(min(1.0, cohesion + extra), 3),
                                     label=surface[term].most_common(1)[0][0]))
            taken.update(members)

    def _groups(self, pool: list[Memory], vectors: np.ndarray) -> list[_Group]:
        """Groups of mentions of one fact, most mentioned first: each time, the memory whose
        neighbourhood (cosine ≥ min_similarity) holds the most mentions, with that
        neighbourhood; until no neighbourhood reaches `min_repeats`."""
        cfg = self.config
        sims = vectors @ vectors.T
        remaining = list(range(len(pool)))
        groups: list[_Group] = []
        while remaining:
            best: tuple[int, int, list[int]] | None = None
            for i in remaining:
                near = [j for j in remaining if sims[i, j] >= cfg.min_similarity]
                count = mentions([pool[j] for j in near])
                if best is None or count > best[0]:
                    best = (count, i, near)
            assert best is not None
            count, central, near = best
            if count < cfg.min_repeats:
                break
            members = [pool[j] for j in near]
            if mean_trust(members) >= cfg.min_trust:
                others = [float(sims[central, j]) for j in near if j != central]
                cohesion = float(np.mean(others)) if others else 1.0
                extra = 0.05 * (count - cfg.min_repeats)
                groups.append(_Group(central, near, round(min(1.0, cohesion + extra), 3)))
            remaining = [j for j in remaining if j not in near]
        return groups

    async def _promote(self, state: MemoryState, central: Memory, members: list[Memory],
                       vectors: np.ndarray, group: _Group, now: datetime) -> MemoryEvent | None:
        """The semantic memory of one group, or None when a fact already held wins."""
        cfg = self.config
        pattern = group.label is not None
        summary = pattern_summary(group.label, members) if group.label else rules_summary(central, members)
        vector = await vector_for(summary, vectors[[group.central]], self.embed)
        key = None if pattern else next(
            (k for k, _ in Counter(m.entity_key for m in members if m.entity_key).most_common(1)), None)
        held = (self._pattern_held(state, central.user_id, group.label, vector) if group.label
                else self._already_held(state, central.user_id, key, vector))
        if held:
            return None
        review = group.confidence < cfg.review_below
        own = [PATTERN_TAG, group.label] if group.label else [
            t for m in members for t in m.tags if t not in _OWN_TAGS]
        tags = [PROMOTED_TAG, *([REVIEW_TAG] if review else []), *own]
        sims = vectors[group.members] @ vectors[group.central]
        ids = [m.id for m in members]
        latest = members[-1]
        memory = Memory(
            id=lifecycle_id("pattern" if pattern else "promoted", central.user_id,
                            *([group.label] if group.label else []), *sorted(ids)),
            user_id=central.user_id, type="semantic",
            category=Counter(m.category for m in members).most_common(1)[0][0],
            summary=summary, tags=list(dict.fromkeys(tags))[:8],
            entities=list(dict.fromkeys(e for m in members for e in m.entities)), entity_key=key,
            source=latest.source, trust_score=mean_trust(members),
            importance=max(m.importance for m in members), private=any(m.private for m in members),
            created_at=now, updated_at=now, last_accessed=now, valid_from=members[0].created_at,
            related_ids=ids, relations={m.id: round(float(s), 4) for m, s in zip(members, sims)
                                        if m.id != central.id} | {central.id: 1.0},
            source_turn_ids=merged_refs(members), agent_id=latest.agent_id,
            run_id=latest.run_id, actor_id=latest.actor_id, role=latest.role,
            thread_id=latest.thread_id,
        )
        state.store(memory, vector)
        return state.announce("promoted", memory, thread_of(memory), now, {
            "promoted_from": ids, "mentions": mentions(members), "confidence": group.confidence,
            "needs_review": review, **({"pattern": group.label} if pattern else {})}, actor=ACTOR)

    def _pattern_held(self, state: MemoryState, user_id: str, label: str,
                      vector: np.ndarray) -> bool:
        """Whether the pattern is known already (an active pattern memory on the same topic) or
        a pinned or user-set fact is on the same subject (the user's own version wins)."""
        user_index = state.index.user(user_id)
        if any(m.is_visible and PATTERN_TAG in m.tags and label in m.tags
               for m in user_index.stored_docs()):
            return True
        near = user_index.search(vector, 5, "semantic")
        return any(is_canonical(m) and sim >= self.config.canonical_similarity for m, sim in near)

    def _already_held(self, state: MemoryState, user_id: str, key: str | None,
                      vector: np.ndarray) -> bool:
        """Whether an active semantic memory has the fact already: one with the same entity
        key, one within the dedup check band, or a pinned or user-set one on the same subject
        (`canonical_similarity`, looser: the user's own version always wins)."""
        user_index = state.index.user(user_id)
        if key and any(m.type == "semantic" for m in user_index.with_entity_key(lambda k: k == key)):
            return True
        near = user_index.search(vector, 5, "semantic")
        return any(sim >= state.config.profile.semantic_check_low
                   or (is_canonical(m) and sim >= self.config.canonical_similarity) for m, sim in near)
