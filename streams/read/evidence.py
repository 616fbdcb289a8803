"""Questions whose answer takes several memories: which ones, and the parts of each
(docs/architecture.md#read-path, issue 53).

A query ranks memories one by one, so a question that combines facts — "what do Ana and Ben
both like", "how many times did Ana see the dentist", "did Ana adopt the dog before or after her
new job", "how has Ana's commute changed", "what books has Ana read" — got its best-matching
fact several times over (paraphrases, several memories of one turn) and missed the others. Such
a question is told apart by its wording (`combining_kind`), without an LLM; `parts` splits it
into the clauses that each need their own evidence ("Ana adopt the dog", "her new job"), which
`streams.read.query` retrieves one by one (the question's vector with each part's words) and
covers in the answer (`streams.read.diversity.cover`): the best memory of every part is in it.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from streams.memory.lexical_index import tokenize_text
from streams.memory.model import Memory
from streams.memory.vector_index import UserIndex
from streams.read.fusion import blend

CombiningKind = Literal["both", "count", "order", "change", "list"]
"""both: two things or people together; count: how many / how often; order: before / after,
which first; change: what changed, used to, old and new; list: every item of a kind ("what
books has Ana read", "where has Ana camped")."""

_KINDS: tuple[tuple[CombiningKind, re.Pattern[str]], ...] = (
    ("count", re.compile(r"\bhow\s+(?:many|often|much\s+times)\b|\bnumber\s+of\b|\bhow\s+many\s+times\b",
                         re.IGNORECASE)),
    ("change", re.compile(
        r"\b(?:chang(?:e|ed|es|ing)|used?\s+to|any\s?more|no\s+longer|switch(?:ed)?|"
        r"previous(?:ly)?|former(?:ly)?|(?:old|new)\s+\w+\s+and\s+(?:the\s+|her\s+|his\s+|their\s+)?(?:old|new)|"
        r"still)\b", re.IGNORECASE)),
    ("order", re.compile(r"\b(?:before|after|first|earlier|later|prior\s+to)\b", re.IGNORECASE)),
    ("both", re.compile(r"\b(?:both|in\s+common|each\s+other|either|neither)\b|"
                        r"\b[A-Z][a-z]+\s+and\s+[A-Z][a-z]+\b")),
    ("list", re.compile(
        r"^\s*(?:what|which|where)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?(?:\w+s|places|people)\s+"
        r"(?:has|have|had|does|do|did|is|are|was|were)\b"
        r"|^\s*(?:where|what)\s+(?:has|have)\b"
        r"|^\s*what\s+are\s+\w+(?:'s|s')\s+\w+s\b", re.IGNORECASE)),
)

_SPLIT = re.compile(r"\s*(?:,|;|\bbefore\s+or\s+after\b|\bor\b|\band\b|\bbefore\b|\bafter\b|"
                    r"\bthan\b|\bboth\b|\bthen\b)\s*", re.IGNORECASE)


def combining_kind(text: str) -> CombiningKind | None:
    """What kind of combining question `text` is, or None for a question one memory answers."""
    for kind, pattern in _KINDS:
        if pattern.search(text):
            return kind
    return None


_PAIR = re.compile(r"\b([A-Z][\w'-]*)\s+and\s+([A-Z][\w'-]*)\b")
"""Two names joined by "and" ("Jon and Gina", "Nike and Gatorade")."""


def parts(text: str) -> list[str]:
    """The clauses of a question that each need their own evidence, each with words a lexical
    search can match; one part (the question) when it does not split. Two names joined by
    "and" share the rest of the question: each is a part with all of it ("Did Jon and Gina both
    dance?" -> "Did Jon both dance?", "Did Gina both dance?"), since each one's evidence says
    what is asked about them. Otherwise the question splits at its conjunctions; a part
    without a word of its own ("or", "after") is dropped."""
    pair = _PAIR.search(text)
    if pair is not None:
        return [f"{text[:pair.start()]}{name}{text[pair.end():]}".strip(" ?.!")
                for name in pair.groups()]
    clauses = [c.strip(" ?.!") for c in _SPLIT.split(text)]
    kept = [c for c in clauses if c and tokenize_text(c)]
    return kept if len(kept) > 1 else [text]


PART_DENSE_WEIGHT = 0.3
"""The weight of the question's cosine in a part's relevance (the rest: the part's own words,
BM25): the vector is the whole question's, so on its own it finds the part the question is
mostly about for every part."""

WIDER = 2
"""How many times the usual candidates a count or list question draws: its items are many."""


def replaced_rows(index: UserIndex) -> np.ndarray:
    """Rows of the values a correction replaced (superseded: not served, kept with their
    vector), which a question about a change is answered with beside the current value."""
    cols = index.columns()
    return cols.replaced & ~cols.visible & ~cols.archived


def part_relevance(index: UserIndex, cosines: np.ndarray, part: str, mask: np.ndarray) -> np.ndarray:
    """Every row's relevance to one part of a question: mostly the part's words (BM25, over
    `mask`), the question's cosine after them (`PART_DENSE_WEIGHT`)."""
    return blend(cosines, index.lexical_scores(part), mask, PART_DENSE_WEIGHT)


def gather(index: UserIndex, scores: np.ndarray, parts_scores: Sequence[np.ndarray],
           mask: np.ndarray, kind: CombiningKind, pool: list[tuple[Memory, float]],
           candidates: int, accept: Callable[[Memory], bool] | None = None,
           ) -> tuple[list[tuple[Memory, float]], list[str]]:
    """The candidates of a combining question: `pool` (drawn by the whole question's `scores`)
    with, for a count or list question, `WIDER` times as many, and each part's best candidates
    (by `parts_scores`: `part_relevance`), every one at its
    relevance to the whole question so all compete on one scale; and the id of each part's best
    memory, which the answer must hold (`streams.read.query.select`). A change question's mask
    holds the replaced values too (`replaced_rows`), so it is answered with the values before."""
    have = {m.id for m, _ in pool}
    out = list(pool)
    floor = min((relevance for _, relevance in pool), default=0.0)

    def add(found: list[tuple[Memory, float]], at_least: float = -np.inf) -> None:
        for memory, _ in found:
            row = index.row(memory.id)
            if memory.id not in have and row is not None:
                have.add(memory.id)
                out.append((memory, max(float(scores[row]), at_least)))

    if kind in ("count", "list"):
        add(index.best(scores, mask, WIDER * candidates, accept))
    firsts: list[str] = []
    for part_scores in parts_scores:
        best = index.best(part_scores, mask, candidates, accept)
        # at no less than the pool's worst: the pool's spread of relevance, which scales the
        # ranking's similarity term (`ranking.pool_relevance`), stays the question's
        add(best, floor)
        if best and best[0][0].id not in firsts:
            firsts.append(best[0][0].id)
    return out, firsts
