"""Answering `memory.query` from the in-worker index (docs/architecture.md#read-path, seed 001 §6).

`plan_query` checks a request against the categories policy and the limits (fails closed) and
resolves what it asks for; `execute` filters before ranking, ranks with the configurable
weights and the related boost, drops what is under `threshold`, fills `top_k` by score with
1-3 episodic items at most and the rest semantic (seed 003: "prioritise semantic; include 1-3
recent episodic"; on recall intent more episodic ones, only from the asked dates), and fits
the delta header first and then the items into `budget_tokens`. Both are pure: the HTTP handler and the
latency benchmark call the same code.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Sequence

import numpy as np

from streams.read import cold_tier, ranking
from streams.settings import ReadSettings
from streams.read.calibration import FALLBACK, ScoreCurve, in_order
from streams.read.consolidated import lift, originals_mask
from streams.read.diversity import diversify
from streams.read.evidence import (
    CombiningKind, combining_kind, gather, part_relevance, parts, replaced_rows,
)
from streams.read.fusion import COSINE_ONLY, Retrieval, relevance
from streams.read.neighbours import START, neighbours, related, with_neighbours
from streams.read.categories import CategoryPolicy
from streams.memory.consent import pending_note
from streams.memory.model import Memory
from streams.read.errors import InvalidQuery
from streams.read.filters import base_mask, episodic_mask, row_predicate
from streams.language.dates import DateWindow, time_window
from streams.read.recall_intent import has_recall_intent
from streams.read.token_budget import TokenCounter, fit
from streams.write.procedural import CATEGORY as PROCEDURAL_CATEGORY
from streams.memory.vector_index import UserIndex
from topics.query import (
    DeltaHeader,
    QueryFilters,
    QueryRequest,
    QueryResponse,
    ReturnMode,
    TimeWindow,
)


PROCEDURAL = PROCEDURAL_CATEGORY.casefold()
EPISODE_TYPES = ("episodic", "consolidated")
SCORE_DIGITS = 6
"""Decimals of an item's `score` in an answer."""
"""Types that fill the episodic slots of an answer."""


@dataclass(frozen=True)
class QueryHit:
    """A ranked memory: `similarity` is the cosine, `relevance` what the candidates were drawn
    by (the cosine in dense mode, the fused dense + BM25 relevance in hybrid mode:
    `streams.read.fusion`), which the ranking formula's similarity term scales over the
    candidate pool (`ranking.pool_relevance`); `score` is that formula's (it orders one
    answer), `calibrated` the probability that the memory answers the query
    (`streams.read.calibration`: what `threshold` compares with, the item's `score`)."""

    memory: Memory
    similarity: float
    score: float
    relevance: float | None = None
    calibrated: float = 0.0

    def as_item(self) -> dict[str, Any]:
        """The JSON item of a query answer: the memory (no vector) with its score."""
        item = self.memory.model_dump(mode="json", exclude={"embedding_b64", "context_b64"})
        item["score"] = round(self.calibrated, SCORE_DIGITS)
        item["archived"] = self.memory.is_archived
        return item

    def explained(self) -> dict[str, float]:
        """The figures behind the score, for a request with `explain` (`topics.query.Explain`)."""
        relevance = self.relevance if self.relevance is not None else self.similarity
        return {"similarity": round(self.similarity, 6), "relevance": round(relevance, 6),
                "rank_score": round(self.score, 6)}


def related_bullets(index: UserIndex, memory: Memory, limit: int = 2) -> list[dict[str, Any]]:
    """The strongest `related_to` neighbours of a memory that are still active (seed 001 §2).

    Links cross categories: each bullet names its category, by which the caller's allowlist
    keeps or drops it (`streams.api.scope.Scope.related`)."""
    out = []
    for other_id, strength in sorted(memory.relations.items(), key=lambda kv: -kv[1]):
        other = index.docs.get(other_id)
        if other is not None and other.is_visible:
            out.append({"id": other.id, "category": other.category, "summary": other.summary,
                        "strength": strength})
        if len(out) >= limit:
            break
    return out


def user_clock(index: UserIndex) -> datetime | None:
    """The user's "now": the latest event time among their memories (never the wall clock)."""
    stored = index.stored_docs()  # edges do not matter here: no served copies to make
    times = [m.updated_at for m in stored] + [m.last_accessed for m in stored]
    return max(times) if times else None


def linked_strength(index: UserIndex, memory: Memory,
                    categories: frozenset[str] | None = None) -> float:
    """The strongest `related_to` edge of a memory (the ranking's related term); with
    `categories` (casefolded), not the edges to the user's memories of other categories: an
    answer's scores owe nothing to a memory the query may not read."""
    if categories is None:
        return max(memory.relations.values(), default=0.0)
    strengths = [strength for other_id, strength in memory.relations.items()
                 if (other := index.stored(other_id)) is None
                 or other.category.casefold() in categories]
    return max(strengths, default=0.0)


def _scored(pool: Sequence[tuple[Memory, float]], cosines: np.ndarray, index: UserIndex,
            now: datetime, weights: ranking.RankWeights,
            curve: ScoreCurve = FALLBACK, categories: frozenset[str] | None = None) -> list[QueryHit]:
    """Hits of a pool of (memory, relevance), best ranking score first, each with its
    calibrated score (`curve`: of its relevance and its ranking score, then non-increasing
    along that order: `calibration.in_order`); `cosines` are every row's.
    The similarity term is the relevance scaled over the pool when `weights.relevance_norm`
    says so (`ranking.pool_relevance`); with `weights.diversity`, the order is the maximal
    marginal relevance one and each score the marginal one (`streams.read.diversity`); the
    related term counts edges to memories of `categories` only, when given (`linked_strength`)."""
    relevances = [rel for _, rel in pool]
    if weights.relevance_norm == "pool":
        terms = ranking.pool_relevance(np.asarray(relevances), weights.relevance_min_spread).tolist()
    else:
        terms = relevances
    hits = []
    rows = [index.row(m.id) for m, _ in pool]
    for (m, rel), term, row in zip(pool, terms, rows):
        sim = float(cosines[row]) if row is not None else rel
        hits.append(QueryHit(m, sim, ranking.score(m, term, now, weights,
                                                   linked_strength(index, m, categories)), rel))
    if weights.diversity > 0 or weights.said_again > 0:
        hits = diversify(hits, index.vectors(rows), weights.diversity,
                         [h.memory.source_turn_ids for h in hits], weights.said_again)
    else:
        hits.sort(key=lambda h: h.score, reverse=True)
    # each item's score once its ranking score is final (a marginal one under diversity), then
    # non-increasing along the ranking's order (`calibration.in_order`)
    raw = [curve.score(h.relevance if h.relevance is not None else h.similarity, h.score) for h in hits]
    return [replace(h, calibrated=score) for h, score in zip(hits, in_order(raw))]


def rank(
    index: UserIndex, query_vector: np.ndarray, *, top_k: int, candidates: int,
    weights: ranking.RankWeights, now: datetime | None = None, text: str = "",
    retrieval: Retrieval = COSINE_ONLY, curve: ScoreCurve = FALLBACK,
) -> list[QueryHit]:
    """Top-k active memories by the ranking formula, over the best `candidates` by relevance
    (no policy, filters or budget: the offline pipeline and the scenario tests use it).
    `text` is the query, for the lexical half of hybrid retrieval and its time phrase (whose
    window, read against `now`, lifts the memories of those days: `streams.read.fusion`)."""
    if not len(index):
        return []
    now = now or user_clock(index)
    assert now is not None  # the index has memories
    cosines = lift(index, index.query_similarities(query_vector))
    visible = index.columns().visible
    window = time_window(text, now) if text else None
    scores = relevance(index, cosines, text, visible, retrieval, window)
    pool = index.best(scores, visible, max(candidates, top_k))
    if not pool:
        return []
    return _scored(pool, cosines, index, now, weights, curve)[:top_k]


@dataclass(frozen=True)
class QueryLimits:
    """What a query may ask for and how far it looks; made from the read settings (`of`)."""

    default_top_k: int
    max_top_k: int
    max_budget_tokens: int
    candidates: int
    episodic_max: int
    recall_episodic: int
    cold_tier_similarity: float
    """Below this cosine an active memory does not count as an answer (`streams.read.cold_tier`)."""
    bullets_threshold: float | None
    """The `threshold` of a bullets answer that sets none (`QUERY_THRESHOLD`)."""
    gather_evidence: bool = True
    """Whether a combining question is answered with the evidence of each of its parts
    (`streams.read.evidence`, QUERY_GATHER_EVIDENCE)."""
    neighbour_slots: int = 0
    """Places of an answer after its first five for the memories said next to its best hits
    (`streams.read.neighbours`, QUERY_NEIGHBOUR_SLOTS); 0: none."""
    related_slots: int = 0
    """Places after those for the memories the relations layer links to the best hits
    (`streams.read.neighbours.related`, QUERY_RELATED_SLOTS); 0: none."""

    @classmethod
    def of(cls, read: ReadSettings) -> "QueryLimits":
        return cls(default_top_k=read.memory_k, max_top_k=read.query_max_top_k,
                   max_budget_tokens=read.query_max_budget_tokens,
                   candidates=read.memory_context_topk, episodic_max=read.query_episodic_max,
                   recall_episodic=read.query_recall_episodic,
                   cold_tier_similarity=read.cold_tier_similarity,
                   bullets_threshold=read.query_threshold,
                   gather_evidence=read.query_gather_evidence,
                   neighbour_slots=read.query_neighbour_slots,
                   related_slots=read.query_related_slots)


@dataclass(frozen=True)
class QueryPlan:
    """A request resolved against the policy and limits: everything `execute` needs."""

    user_id: str
    agent: str
    text: str
    top_k: int
    categories: frozenset[str]
    filters: QueryFilters
    threshold: float | None
    mode: ReturnMode
    budget_tokens: int | None
    reference: datetime | None
    recall: bool
    window: DateWindow | None
    episodic_reserve: int
    episodic_cap: int
    candidates: int
    include_archived: bool | None = None
    """The request's `include_archived` (None: the archive is searched when `cold_tier` says)."""
    cold_tier_similarity: float = 0.6
    explain: bool = False
    """Whether each item carries the figures behind its score (`QueryHit.explained`)."""
    combining: CombiningKind | None = None
    """What kind of question whose answer takes several memories this is (None: one memory
    answers it; `streams.read.evidence`)."""
    parts: tuple[str, ...] = ()
    """The clauses of a combining question that each need their own evidence (none when it
    does not split)."""
    neighbour_slots: int = 0
    """Places after the first five for the neighbours of the best hits (`QueryLimits`)."""
    related_slots: int = 0
    """Places after the neighbours' for the memories linked to the best hits (`QueryLimits`)."""


def plan_query(request: QueryRequest, user_id: str, policy: CategoryPolicy, limits: QueryLimits,
               reference: datetime | None) -> QueryPlan:
    """Check `request` and resolve it; raises `InvalidQuery` / `QueryForbidden` (fail closed)."""
    filters = request.filters
    if filters.user_id is not None and filters.user_id != user_id:
        raise InvalidQuery("filters.user_id must be the user of the route")
    top_k = request.top_k or limits.default_top_k
    if top_k > limits.max_top_k:
        raise InvalidQuery(f"top_k must be at most {limits.max_top_k}")
    if request.budget_tokens is not None and request.budget_tokens > limits.max_budget_tokens:
        raise InvalidQuery(f"budget_tokens must be at most {limits.max_budget_tokens}")
    categories = policy.allowed(request.agent, request.categories, filters.category)
    asked = {c.casefold() for c in [*(request.categories or []), *([filters.category] if filters.category else [])]}
    if PROCEDURAL not in asked:  # seed 001 §12: "how to" steps only for an agent that asks
        categories = categories - {PROCEDURAL}
    reference = request.reference_time or reference
    window = time_window(request.query, reference) if reference is not None else None
    recall = window is not None or has_recall_intent(request.query)
    combining = combining_kind(request.query) if limits.gather_evidence else None
    clauses = tuple(parts(request.query)) if combining is not None else ()
    if recall:
        reserve, cap = min(limits.recall_episodic, top_k), top_k
    else:
        reserve, cap = (1 if top_k >= 2 else 0), limits.episodic_max
    return QueryPlan(
        user_id=user_id, agent=request.agent, text=request.query, top_k=top_k,
        categories=categories, filters=filters,
        threshold=(request.threshold if request.threshold is not None
                   else limits.bullets_threshold if request.return_ == "bullets" else None),
        mode=request.return_, budget_tokens=request.budget_tokens, reference=reference,
        recall=recall, window=window, episodic_reserve=reserve, episodic_cap=cap,
        candidates=max(limits.candidates, top_k), include_archived=request.include_archived,
        cold_tier_similarity=limits.cold_tier_similarity, explain=request.explain,
        combining=combining, parts=clauses if len(clauses) > 1 else (),
        neighbour_slots=limits.neighbour_slots, related_slots=limits.related_slots,
    )


def archive_rows(index: UserIndex) -> np.ndarray:
    """Rows of the cold tier a query may serve: archived, but not what a newer memory answers
    for (`superseded_by`: the episodes a consolidation replaced, a consolidated memory a later
    one replaced; or, made before that link was kept, an original of a consolidated memory)."""
    cols = index.columns()
    return cols.archived & ~cols.replaced & ~originals_mask(index)


def _eligible(hits: list[QueryHit], plan: QueryPlan, policy: CategoryPolicy) -> list[QueryHit]:
    """Hits whose score (`calibrated`) is at or above the threshold; categories with context
    `all` are exempt from it."""
    if plan.threshold is None:
        return hits
    out = []
    for hit in hits:
        spec = policy.spec(hit.memory.category)
        # the score as the answer shows it (rounded): a threshold of a score an answer showed
        # keeps that item
        if round(hit.calibrated, SCORE_DIGITS) >= plan.threshold or (spec is not None and spec.context == "all"):
            out.append(hit)
    return out


def is_conversation_episode(memory: Memory) -> bool:
    """An episode of the after-turn capture ("On 2023-05-08 … we discussed …", seed 003), which
    the 1–3 episodic slots are about. A dated event the extractor wrote from one turn ("Ana
    adopted Luna on 3 May 2023") is typed episodic too but is a fact about the user: capping it
    cost a tenth of LoCoMo recall_any@10 (0.659 -> 0.600), so it competes on score like a
    semantic fact."""
    return memory.type == "episodic" and (
        memory.category == "Conversation_Summary" or "episode" in memory.tags)


def select(semantic: list[QueryHit], episodic: list[QueryHit], plan: QueryPlan,
           policy: CategoryPolicy, covering: Sequence[str] = ()) -> list[QueryHit]:
    """The answer's items within the episodic slots: `episodic_reserve` of them kept for
    episodic items when there are any (1 by default), at most `episodic_cap` (3 by default) so
    the rest goes to semantic ones; at most `rag_length` of one category. Best ranking score
    first, which is best `calibrated` (the score an item shows) first too: `_scored` made the
    scores fall along the ranking's order, so a threshold never drops an item above one it
    keeps. `covering` names memories the answer holds first when they are among the hits:
    the best memory of each part of a combining question (`streams.read.evidence.gather`)."""
    per_category: Counter[str] = Counter()

    def fits(hit: QueryHit) -> bool:
        key = hit.memory.category.casefold()
        spec = policy.spec(key)
        return spec is None or spec.rag_length is None or per_category[key] < spec.rag_length

    chosen: list[QueryHit] = []
    taken: set[str] = set()
    n_episodic = 0

    def take(hit: QueryHit, episode: bool) -> None:
        nonlocal n_episodic
        per_category[hit.memory.category.casefold()] += 1
        n_episodic += episode
        taken.add(hit.memory.id)
        chosen.append(hit)

    for hit in episodic[:min(plan.episodic_reserve, plan.episodic_cap)]:
        if fits(hit):
            take(hit, True)
    by_id = {h.memory.id: h for h in [*semantic, *episodic]}
    for memory_id in covering:
        hit = by_id.get(memory_id)
        if hit is not None and memory_id not in taken and len(chosen) < plan.top_k and fits(hit):
            take(hit, is_conversation_episode(hit.memory))
    for hit in sorted([*semantic, *episodic], key=lambda h: -h.score):
        if len(chosen) >= plan.top_k:
            break
        if hit.memory.id in taken:
            continue
        is_episode = is_conversation_episode(hit.memory)
        if (is_episode and n_episodic >= plan.episodic_cap) or not fits(hit):
            continue
        take(hit, is_episode)
    return cover_early(sorted(chosen, key=lambda h: -h.score), covering, COVER_BY)


COVER_BY = 5
"""Places of an answer within which each part's evidence of a combining question stands."""


def cover_early(ranked: list[QueryHit], covering: Sequence[str], by: int) -> list[QueryHit]:
    """`ranked` with the hits of `covering` (each part's best memory) that rank below place
    `by` moved up to end the first `by` places, in their order, the items they displace moving
    down: an agent that reads the top of an answer (or asks for fewer items) gets each part's
    evidence, not paraphrases of one. A moved hit shows the scores of the first item it
    displaces, so scores stay non-increasing along the answer (a threshold keeps a prefix)."""
    wanted = set(covering)
    late = [h for h in ranked[by:] if h.memory.id in wanted]
    if not late:
        return ranked
    at = max(1, by - len(late))
    slot = ranked[at]
    moved = [replace(h, score=slot.score, calibrated=slot.calibrated) for h in late]
    late_ids = {h.memory.id for h in late}
    rest = [h for h in ranked[at:] if h.memory.id not in late_ids]
    return [*ranked[:at], *moved, *rest]


def bullet(memory: Memory) -> str:
    """The memory as one line of an agent's context; an archived one says so, and one whose
    change waits for the user's consent says what is pending (never served as settled)."""
    tier = (" (archived)" if memory.is_archived
            else " (replaced since)" if memory.state == "superseded" else "")
    return f"[{memory.category}]{tier} {memory.summary}{pending_note(memory)}"


def _fit_header(header: str, budget: int | None, counter: TokenCounter) -> tuple[str, int]:
    """The delta header within `budget`: its title and as many bullets (newest first) as fit;
    nothing when not even one bullet fits."""
    if not header:
        return "", 0
    lines = header.split("\n")
    costs = counter.count_many(lines)
    if budget is None or sum(costs) <= budget:
        return header, sum(costs)
    kept = fit(costs[1:], budget, reserved=costs[0])
    if not kept.kept:
        return "", 0
    return "\n".join([lines[0], *(lines[1 + i] for i in kept.kept)]), kept.tokens


def execute(index: UserIndex, vector: np.ndarray, plan: QueryPlan, policy: CategoryPolicy,
            weights: ranking.RankWeights, counter: TokenCounter,
            delta: tuple[int, int, str] | None = None, retrieval: Retrieval = COSINE_ONLY,
            curve: ScoreCurve = FALLBACK) -> tuple[QueryResponse, list[QueryHit]]:
    """Answer a planned query from one user's index.

    `delta` is (current rev, since_rev, rendered header) when the request asked for it;
    `retrieval` says how relevance is computed (dense, or fused with BM25 on `plan.text`),
    `curve` how an item's relevance becomes its score (`streams.read.calibration`).
    Returns the response and the hits it carries (whose access the caller records).
    """
    semantic: list[QueryHit] = []
    episodic: list[QueryHit] = []
    cold: cold_tier.ColdReason | None = None
    covering: list[str] = []
    if len(index):
        cosines = lift(index, index.query_similarities(vector))
        allowed = base_mask(index, plan.categories, plan.filters)
        cold = cold_tier.reason(plan.include_archived, plan.recall, cosines[allowed], plan.top_k,
                                plan.cold_tier_similarity, plan.combining is not None)
        if cold is not None:
            allowed |= base_mask(index, plan.categories, plan.filters, archive_rows(index))
        if plan.combining == "change":
            allowed |= base_mask(index, plan.categories, plan.filters, replaced_rows(index))
        scores = relevance(index, cosines, plan.text, allowed, retrieval, plan.window)
        is_episode = episodic_mask(index, plan.window)
        accept = row_predicate(plan.filters)
        now = plan.reference or user_clock(index)
        assert now is not None
        kinds = index.columns().episodic
        # One candidate pool by similarity for both types, as `rank` does: a pool per type
        # doubles the candidates, and importance/recency then lift weakly similar items in
        # (LoCoMo recall_any@10 0.619 -> 0.567 on conv-26/30). Episodic items for the kept
        # slots are fetched beyond the pool only when it has too few.
        searched = allowed & (~kinds | is_episode)
        pool = index.best(scores, searched, plan.candidates, accept)
        if plan.combining is not None:
            pool, covering = gather(
                index, scores, [part_relevance(index, cosines, part, allowed) for part in plan.parts],
                searched, plan.combining, pool, plan.candidates, accept)
        in_pool = {m.id for m, _ in pool}
        n_episodic = sum(m.type == "episodic" for m, _ in pool)
        if n_episodic < plan.episodic_reserve:
            pool += [(m, sc) for m, sc in index.best(scores, allowed & is_episode,
                                                     plan.episodic_reserve, accept)
                     if m.id not in in_pool]
        scored = _scored(pool, cosines, index, now, weights, curve, plan.categories)
        # A consolidated memory is the episodes it replaced (seed 000 §5: "prefer
        # consolidated"): it takes an episodic slot as they would have.
        semantic = [h for h in scored if h.memory.type not in EPISODE_TYPES]
        episodic = [h for h in scored if h.memory.type in EPISODE_TYPES]
    hits = select(_eligible(semantic, plan, policy), _eligible(episodic, plan, policy), plan, policy,
                  covering)
    if (plan.neighbour_slots > 0 or plan.related_slots > 0) and hits and len(index):
        hits = _with_nearby(index, hits, cosines, allowed, accept, plan, policy, covering)

    header, header_tokens = "", 0
    if delta is not None:
        header, header_tokens = _fit_header(delta[2], plan.budget_tokens, counter)
    lines = [f"- {bullet(h.memory)}" for h in hits]
    costs = counter.count_many(lines)
    fitted = fit(costs, plan.budget_tokens, reserved=header_tokens)
    hits = [hits[i] for i in fitted.kept]
    items = [_item(index, hits[n], costs[i], plan.mode, plan.explain)
             for n, i in enumerate(fitted.kept)]
    context = "\n".join(([header] if header else []) + [lines[i] for i in fitted.kept])
    response = QueryResponse(
        user_id=plan.user_id, agent=plan.agent, **{"return": plan.mode},
        delta=None if delta is None else DeltaHeader(rev=delta[0], since_rev=delta[1],
                                                     header=header, tokens=header_tokens),
        items=items, context=context, tokens=fitted.tokens, budget_tokens=plan.budget_tokens,
        dropped_for_budget=fitted.dropped, recall_intent=plan.recall, cold_tier=cold,
        time_window=None if plan.window is None else TimeWindow(
            phrase=plan.window.phrase, start=plan.window.start, end=plan.window.end),
        reference_time=plan.reference,
    )
    return response, hits


def _with_nearby(index: UserIndex, hits: list[QueryHit], cosines: np.ndarray, allowed: np.ndarray,
                 accept: Callable[[Memory], bool] | None, plan: QueryPlan, policy: CategoryPolicy,
                 covering: Sequence[str] = ()) -> list[QueryHit]:
    """`hits` with, after the first five, the memories said next to the best ones
    (`neighbour_slots`) and then those the relations layer links to them (`related_slots`),
    within the categories' `rag_length` (`streams.read.neighbours`); the memories of
    `covering` (each part's evidence, `select`) are never the ones they displace."""
    cols = index.columns()
    mask = allowed & (cols.visible | cols.archived)
    per_category = Counter(h.memory.category.casefold() for h in hits)

    def fits(memory: Memory) -> bool:
        spec = policy.spec(memory.category.casefold())
        return (spec is None or spec.rag_length is None
                or per_category[memory.category.casefold()] < spec.rag_length)

    near = neighbours(index, hits, cosines, mask, plan.neighbour_slots, accept, fits)
    hits = with_neighbours(hits, near, cosines, index, plan.top_k, keep=covering)
    start = START + len(near)
    linked = related(index, hits, cosines, mask, plan.related_slots, start, accept, fits)
    return with_neighbours(hits, linked, cosines, index, plan.top_k, start, keep=covering)


def _item(index: UserIndex, hit: QueryHit, tokens: int, mode: ReturnMode,
          explain: bool = False) -> dict[str, Any]:
    memory = hit.memory
    if mode == "bullets":
        item = {"id": memory.id, "category": memory.category, "type": memory.type,
                "text": bullet(memory), "tokens": tokens, "archived": memory.is_archived,
                "score": round(hit.calibrated, SCORE_DIGITS)}
    else:
        item = {**hit.as_item(), "text": bullet(memory), "tokens": tokens,
                "related": related_bullets(index, memory)}
    if explain:
        item["explain"] = hit.explained()
    return item
