"""Settings of one concern: read path: retrieval and ranking (docs/configuration.md#read)."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from streams.settings.section import Section


class ReadSettings(Section):
    """Read path: retrieval and ranking."""

    title: ClassVar[str] = "Read path: retrieval and ranking"
    about: ClassVar[str] = (
        'How `memory.query` finds, ranks and cuts an answer '
        '([architecture.md](architecture.md#read-path)).'
    )

    memory_k: int = Field(3, ge=1, description="Default top-k of a query.")
    memory_context_topk: int = Field(24, description="Candidates considered before ranking.")
    rank_w_similarity: float = Field(0.55, description="Ranking weight of cosine similarity.")
    rank_w_importance: float = Field(0.10, description="Ranking weight of (importance - 1) / 4.")
    rank_w_recency: float = Field(0.05, description="Ranking weight of the recency decay.")
    rank_w_pinned: float = Field(0.10, description="Ranking weight of being pinned.")
    rank_w_related: float = Field(0.05, description="Ranking weight of the strongest related edge.")
    rank_relevance_norm: Literal["raw", "pool"] = Field(
        "pool",
        description="Scale of the ranking's similarity term. pool: the candidates' relevance "
        "stretched to [0, 1] (best 1, worst 0), like the importance, recency and pinned terms; "
        "raw: the relevance as retrieved (whose spread over the candidates is ~0.3, so the "
        "other terms outweigh it).",
    )
    rank_diversity: float = Field(
        0.2, ge=0.0, le=1.0,
        description="Maximal marginal relevance: each next item of an answer is ranked by its score "
        "minus this times its highest cosine to the items above it, so paraphrases of one fact do "
        "not fill the answer; 0 ranks by score alone.",
    )
    rank_said_again: float = Field(
        0.2, ge=0.0, le=1.0,
        description="Ranking penalty of a memory all of whose source turns the items above it "
        "in an answer come from: a second memory of one sentence adds less than a memory of "
        "another one; 0 turns it off.",
    )
    query_gather_evidence: bool = Field(
        True,
        description="Questions that combine facts (both, how many, before/after, what "
        "changed, every item of a kind) are answered with the evidence of each of their parts, "
        "the archive and, for a change, the replaced values (streams/read/evidence.py); false "
        "ranks every query's memories one by one.",
    )
    query_model_parts: bool = Field(
        True,
        description="With a model configured (LLM_PROVIDER), a question that combines facts is "
        "split into its searches by the model (one call within LLM_QUERY_BUDGET_MS, the same "
        "question's answer kept for the next time; streams/read/model_parts.py); the rules "
        "split it when there is no model, it fails or this is false.",
    )
    query_neighbour_slots: int = Field(
        2, ge=0,
        description="Places of an answer after its first five for memories said in the same "
        "thread within minutes of its three best hits, ranked by their anchor's similarity "
        "(decaying with the time between them) and their own, each with a source turn the "
        "answer lacks: the other evidence of a question whose facts were said together "
        "(streams/read/neighbours.py); 0 turns it off.",
    )
    query_related_slots: int = Field(
        1, ge=0,
        description="Places of an answer after the neighbours' for memories the relations "
        "layer links (related_to) to its five best hits, ranked by their anchor's similarity "
        "times the link's strength and their own, each with a source turn the answer lacks: "
        "the same thing said another time (streams/read/neighbours.py); 0 turns it off.",
    )
    rank_relevance_min_spread: float = Field(
        0.3, gt=0.0, le=1.0, description="With RANK_RELEVANCE_NORM=pool, the smallest spread of "
        "the candidates' relevance that is stretched to [0, 1] (near-equal candidates stay near-equal).",
    )
    retrieval_mode: Literal["dense", "hybrid"] = Field(
        "hybrid",
        description="dense: the similarity term is the cosine alone. hybrid: the cosine fused "
        "with BM25 over the user's searchable memories' summaries, entities and days said "
        "(stemmed; an inverted index per user, updated in place), see RETRIEVAL_FUSION.",
    )
    retrieval_fusion: Literal["blend", "rrf"] = Field(
        "blend",
        description="Hybrid fusion. blend: RETRIEVAL_DENSE_WEIGHT x cosine + the rest x BM25 / "
        "the best BM25 among the rows the query may return. rrf: reciprocal rank fusion "
        "(k = RETRIEVAL_RRF_K), scaled so first in both rankings is 1.",
    )
    retrieval_dense_weight: float = Field(
        0.7, ge=0.0, le=1.0, description="Weight of the cosine in the blend fusion (the rest is BM25's).",
    )
    retrieval_rrf_k: int = Field(60, ge=1, description="k of reciprocal rank fusion (60 as in its paper).")
    retrieval_window_boost: float = Field(
        0.1, ge=0.0, le=1.0,
        description="Added to the relevance of memories said on, or mentioning, a day inside the "
        "time window a query names (\"in May 2023\", \"last week\"); 0 turns it off.",
    )
    query_max_top_k: int = Field(100, description="Largest top_k a query may ask for.")
    categories_path: Path | None = Field(
        None, description="Categories YAML (seed 001 §5: categories, context modes, per-agent "
        "allowlists); unset: the repository's categories.yaml.",
    )
    query_episodic_max: int = Field(
        3, ge=1, description="Episodic items in a query answer at most (one is kept for them when "
        "top_k >= 2 and one matches), unless the query has recall intent.",
    )
    query_recall_episodic: int = Field(
        3, ge=1, description="Episodic items kept for a query with recall intent (\"what did we "
        "discuss last week\"); the rest of top_k may be episodic too.",
    )
    query_max_budget_tokens: int = Field(32768, ge=1, description="Largest budget_tokens a query may ask for.")
    rank_w_consolidated: float = Field(
        0.05, ge=0.0, description="Ranking bonus of a consolidated memory (queries prefer them to episodes).",
    )
    rank_w_insight: float = Field(
        0.10, ge=0.0, description="Ranking penalty of an insight (surfaced with low weight, seed 001 §3).",
    )
    rank_w_archived: float = Field(
        0.02, ge=0.0, description="Ranking penalty of an archived memory (the cold tier): it ranks "
        "below an active one that matches as well.",
    )
    query_threshold: float | None = Field(
        0.02, ge=0.0, le=1.0, description="The threshold of a bullets answer whose request sets "
        "none: items scoring lower (a score is the probability that the item answers the query, "
        "streams/read/calibration.py) are left out, but for categories with context all. Full "
        "answers (inspection, evaluation) apply only a threshold the request sets.",
    )
    cold_tier_similarity: float = Field(
        0.6, ge=-1.0, le=1.0, description="A query reaches into the archive by itself when fewer "
        "than top_k active memories have at least this cosine similarity (the active results are "
        "weak), or when it points to the past (recall intent, a time phrase).",
    )
