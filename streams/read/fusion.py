"""Hybrid retrieval: one relevance per memory from dense similarity and BM25 (docs/architecture.md#read-path input).

The relevance replaces the cosine as the `similarity` term of the ranking formula; the
candidate pool is drawn by it. Two well-studied fusions, chosen by `RETRIEVAL_FUSION`:

- `blend` (default): a convex combination of normalised scores (Bruch, Gai and Ingber, "An
  Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023, found it at least as good as
  RRF and less sensitive to its one parameter): `w·cos + (1 - w)·bm25 / max bm25`, where the
  max is over the rows the query may return, so the lexical term is in [0, 1] like the cosine;
  `w` is `RETRIEVAL_DENSE_WEIGHT`. When no row shares a term with the query the lexical term is
  0 for all of them and the order is the dense one.
- `rrf`: reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009): `Σ 1/(k + rank)`
  over the two rankings (`k` = `RETRIEVAL_RRF_K`, 60 as in the paper; rows without a lexical
  match take no lexical term), scaled by (k + 1) / 2 so a row first in both gets 1 and the
  relevance is on the scale the ranking weights expect.

`dense` mode is the cosine alone, as before hybrid retrieval existed.

A query that names a time ("in May 2023", "last week": `streams.language.dates.time_window`) adds
`RETRIEVAL_WINDOW_BOOST` to the relevance of the memories said or mentioning dates in that
window (`filters.window_mask`), in either mode: the words of a date rarely match how a memory
says it (if at all: most summaries were said on a day they do not name), and the episodic time
filter only ever narrowed the episodes, never lifted the facts of those days.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from streams.memory.vector_index import UserIndex
from streams.settings import ReadSettings
from streams.read.filters import window_mask
from streams.language.dates import DateWindow

Mode = Literal["dense", "hybrid"]
Fusion = Literal["blend", "rrf"]


@dataclass(frozen=True)
class Retrieval:
    """How a query's relevance is computed (settings `RETRIEVAL_*`)."""

    mode: Mode
    fusion: Fusion
    dense_weight: float
    rrf_k: int
    window_boost: float
    """Added to the relevance of the memories in the query's time window (module doc)."""

    @classmethod
    def of(cls, read: ReadSettings) -> "Retrieval":
        return cls(mode=read.retrieval_mode, fusion=read.retrieval_fusion,
                   dense_weight=read.retrieval_dense_weight, rrf_k=read.retrieval_rrf_k,
                   window_boost=read.retrieval_window_boost)


COSINE_ONLY = Retrieval(mode="dense", fusion="blend", dense_weight=1.0, rrf_k=60, window_boost=0.0)
"""Relevance as the cosine alone (no BM25, no time-window boost): what ranking uses when it
is given no retrieval settings."""


def blend(dense: np.ndarray, lexical: np.ndarray, mask: np.ndarray, dense_weight: float) -> np.ndarray:
    """`w·dense + (1 - w)·lexical / max(lexical over mask)` (lexical term 0 when nothing matches)."""
    top = float(lexical[mask].max()) if mask.any() else 0.0
    lexical_norm = lexical / top if top > 0 else np.zeros_like(lexical)
    return (dense_weight * dense + (1.0 - dense_weight) * lexical_norm).astype(np.float32)


def _ranks(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """1-based rank of every masked row by descending score (ties in row order); 0 elsewhere."""
    rows = np.flatnonzero(mask)
    order = rows[np.argsort(-scores[rows], kind="stable")]
    ranks = np.zeros(scores.shape[0], dtype=np.int64)
    ranks[order] = np.arange(1, order.size + 1)
    return ranks


def rrf(dense: np.ndarray, lexical: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """Reciprocal rank fusion of the two rankings over `mask`, scaled so 1 is first in both."""
    out = np.zeros(dense.shape[0], dtype=np.float64)
    dense_rank = _ranks(dense, mask)
    out[mask] += 1.0 / (k + dense_rank[mask])
    matched = mask & (lexical > 0)
    lexical_rank = _ranks(lexical, matched)
    out[matched] += 1.0 / (k + lexical_rank[matched])
    return (out * (k + 1) / 2.0).astype(np.float32)


def relevance(index: UserIndex, dense: np.ndarray, text: str, mask: np.ndarray,
              retrieval: Retrieval, window: DateWindow | None = None) -> np.ndarray:
    """Every row's relevance to the query: `dense` (the cosines) in dense mode, else fused with
    the BM25 scores of `text`; plus `retrieval.window_boost` for the rows in the query's time
    `window` when there is one. `mask` names the rows the query may return: the lexical scores
    are normalised, and ranked, among them only."""
    if not len(index):
        return dense
    scores = dense if retrieval.mode == "dense" else fuse(dense, index.lexical_scores(text), mask,
                                                           retrieval)
    if window is not None and retrieval.window_boost:
        scores = (scores + retrieval.window_boost * window_mask(index, window)).astype(np.float32)
    return scores


def fuse(dense: np.ndarray, lexical: np.ndarray, mask: np.ndarray, retrieval: Retrieval) -> np.ndarray:
    """The fusion `retrieval` names of two aligned score arrays, over the rows in `mask`."""
    if retrieval.fusion == "rrf":
        return rrf(dense, lexical, mask, retrieval.rrf_k)
    return blend(dense, lexical, mask, retrieval.dense_weight)
