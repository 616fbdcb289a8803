"""LoCoMo retrieval metric from provenance (needs no LLM) and a raw-turn baseline.

A question is a hit at k when any (`recall_any@k`) or all (`recall_all@k`) of its evidence
dialogue ids appear among the source turns of the top-k returned items. Recall is reported
next to the context it costs (words of the top-k item texts).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from streams.memory.lexical_index import LexicalIndex
from streams.read.fusion import Retrieval, fuse
from topics.turns import Turn

KS: tuple[int, ...] = (5, 10, 20)
Item = tuple[str, Sequence[str]]
"""A retrieved item: (text, provenance refs `thread_id:turn_id`)."""


def dia_id_of(source_ref: str) -> str:
    """`session_1:D1:3` -> `D1:3` (the thread id has no colon; the dia_id does)."""
    return source_ref.split(":", 1)[1] if ":" in source_ref else source_ref


def score_question(
    evidence: Sequence[str], retrieved_refs_ranked: Sequence[Sequence[str]], k: int
) -> tuple[bool, bool]:
    """(any_hit, all_hit) of the evidence ids among the refs of the top-k items."""
    wanted = set(evidence)
    if not wanted:
        return False, False
    found = {dia_id_of(ref) for refs in retrieved_refs_ranked[:k] for ref in refs}
    return bool(wanted & found), wanted <= found


def context_words(texts: Iterable[str]) -> int:
    return len(" ".join(texts).split())


@dataclass
class RecallReport:
    """Accumulates recall_any/recall_all and context size at k = 5, 10, 20."""

    questions: int = 0
    any_hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    all_hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    words: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))

    def add(self, evidence: Sequence[str], items: Sequence[Item]) -> None:
        """Score one question given its ranked retrieved items."""
        refs = [item[1] for item in items]
        self.questions += 1
        for k in KS:
            any_hit, all_hit = score_question(evidence, refs, k)
            self.any_hits[k] += any_hit
            self.all_hits[k] += all_hit
            self.words[k] += context_words(item[0] for item in items[:k])

    def _mean(self, counts: dict[int, int]) -> dict[int, float]:
        n = self.questions
        return {k: (counts[k] / n if n else 0.0) for k in KS}

    def as_dict(self) -> dict[str, object]:
        words_at = self._mean(self.words)
        return {
            "recall_any": self._mean(self.any_hits),
            "recall_all": self._mean(self.all_hits),
            "context_words_mean": words_at[10],
            "context_words_mean_at": words_at,
            "questions": self.questions,
        }


Embedder = Callable[[list[str]], np.ndarray]


class RawTurnBaseline:
    """Every turn indexed as `"Speaker: text"`, searched per user by cosine similarity, or,
    when `search` is given a hybrid `retrieval`, by the same fusion of cosine and BM25 that
    memory queries use (`streams.read.fusion`): memories against turns under one retrieval.

    `embed` must return one L2-normalised row per text, so a dot product is the cosine.
    """

    def __init__(self, embed: Embedder) -> None:
        self._embed = embed
        self._texts: dict[str, list[str]] = {}
        self._refs: dict[str, list[str]] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._lexical: dict[str, LexicalIndex] = {}

    def index(self, turns: Iterable[Turn]) -> None:
        """Add turns (any number of users); may be called repeatedly."""
        by_user: dict[str, list[Turn]] = {}
        for turn in turns:
            by_user.setdefault(turn.user_id, []).append(turn)
        for user_id, user_turns in by_user.items():
            texts = [f"{t.speaker_name}: {t.text}" for t in user_turns]
            vectors = np.asarray(self._embed(texts), dtype=np.float32)
            if user_id in self._vectors:
                vectors = np.vstack([self._vectors[user_id], vectors])
            self._vectors[user_id] = vectors
            lexical = self._lexical.setdefault(user_id, LexicalIndex())
            start = len(self._texts.get(user_id, []))
            for row, text in enumerate(texts, start):
                lexical.put(row, text)
            self._texts.setdefault(user_id, []).extend(texts)
            self._refs.setdefault(user_id, []).extend(t.ref for t in user_turns)

    def search(self, user_id: str, query_vec: np.ndarray, k: int,
               text: str = "", retrieval: Retrieval | None = None) -> list[tuple[str, list[str]]]:
        """Top-k (text, [ref]) by cosine similarity, fused with BM25 on the query `text` when
        `retrieval` is hybrid; ties keep indexing order."""
        vectors = self._vectors.get(user_id)
        if vectors is None or k <= 0:
            return []
        scores = vectors @ np.asarray(query_vec, dtype=np.float32).ravel()
        if retrieval is not None and retrieval.mode == "hybrid":
            lexical = self._lexical[user_id].scores(text, len(scores))
            scores = fuse(scores, lexical, np.ones(len(scores), dtype=bool), retrieval)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(self._texts[user_id][i], [self._refs[user_id][i]]) for i in top]


def duplicate_rate(vectors_by_user: dict[str, np.ndarray], threshold: float) -> float:
    """Share of memories that have another memory of the same user at cosine >= `threshold`.

    Rows must be L2-normalised. This is the "pairs above the auto-update band" measure of a
    store that dedups well: it should stay near zero.
    """
    total = dupes = 0
    for vectors in vectors_by_user.values():
        if len(vectors) == 0:
            continue
        sims = vectors @ vectors.T
        np.fill_diagonal(sims, -1.0)
        dupes += int((sims.max(axis=1) >= threshold).sum())
        total += len(vectors)
    return dupes / total if total else 0.0
