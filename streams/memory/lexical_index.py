"""BM25 over the texts of one user's searchable memories (summary, entities and the day said:
`vector_index.lexical_text`), the lexical half of hybrid retrieval.

The scoring is `bm25s` (Lucene's BM25, k1 1.5, b 0.75) over tokens from `bm25s.tokenize`:
lower-cased words of two or more characters, English stopwords dropped, Snowball-stemmed
(PyStemmer), so "adopted" finds "adopt" and "dogs" finds "dog".

Why a dirty flag and not incremental updates: `bm25s` precomputes every (token, document)
score into one sparse matrix, and those scores depend on the corpus (document frequencies, the
mean document length), so it cannot add or remove a document in place. So each user has their
own small index: a write (`put`/`discard`, on every add, supersede, delete, restore) only
records the text of a row and marks the index dirty, costing the write path a dict update; the
index is rebuilt from the recorded texts on the first query after a change (`scores`), never on
a query when nothing changed. Tokens are cached per row, so a rebuild tokenises only the rows
whose text changed since the last one. Only searchable memories (active, and archived: the
cold tier) are indexed, so what was superseded or deleted counts neither as a match nor in the
document frequencies.

Like the vector index this is a cache of the `memories` table: it lives in RAM and is made anew
with its `UserIndex` whenever the worker rebuilds the index from the table.
"""
from __future__ import annotations

import logging
import time

import bm25s
import numpy as np
import Stemmer

log = logging.getLogger(__name__)

_STEMMER = Stemmer.Stemmer("english")


class LexicalIndexError(RuntimeError):
    """The BM25 library failed to build or score an index (never raised for an empty one)."""


def tokenize(texts: list[str]) -> list[list[str]]:
    """Each text's BM25 tokens (see the module docstring for the rules)."""
    if not texts:
        return []
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, return_ids=False,
                          show_progress=False)


class LexicalIndex:
    """BM25 scores of a query over texts kept at integer rows (the rows of a `UserIndex`).

    `put` and `discard` are O(1) and only mark the index dirty; `scores` rebuilds it first when
    it is dirty (see the module docstring for why).
    """

    def __init__(self) -> None:
        self._texts: dict[int, str] = {}
        self._tokens: dict[int, tuple[str, list[str]]] = {}
        self._retriever: bm25s.BM25 | None = None
        self._rows = np.zeros(0, dtype=np.int64)
        self._dirty = False
        self.rebuilds = 0
        """How many times the BM25 index was built (tests and benchmarks read it)."""

    def put(self, row: int, text: str) -> None:
        """Index `text` at `row` (replacing what was there)."""
        if self._texts.get(row) != text:
            self._texts[row] = text
            self._dirty = True

    def discard(self, row: int) -> None:
        """Take `row` out of the index (a memory no longer visible)."""
        if self._texts.pop(row, None) is not None:
            self._dirty = True

    @property
    def dirty(self) -> bool:
        return self._dirty

    def __len__(self) -> int:
        return len(self._texts)

    def _rebuild(self) -> None:
        started = time.perf_counter()
        rows = sorted(self._texts)
        missing = [r for r in rows if r not in self._tokens or self._tokens[r][0] != self._texts[r]]
        for row, tokens in zip(missing, tokenize([self._texts[r] for r in missing])):
            self._tokens[row] = (self._texts[row], tokens)
        for row in [r for r in self._tokens if r not in self._texts]:
            del self._tokens[row]
        corpus = [self._tokens[r][1] for r in rows]
        retriever = None
        if any(corpus):
            retriever = bm25s.BM25()
            try:
                retriever.index(corpus, show_progress=False)
            except Exception as exc:  # noqa: BLE001 - the library's own errors are not typed
                raise LexicalIndexError(f"BM25 index of {len(rows)} documents failed") from exc
        self._retriever = retriever
        self._rows = np.asarray(rows, dtype=np.int64)
        self._dirty = False
        self.rebuilds += 1
        log.debug("lexical index rebuilt: %d documents (%d tokenised) in %.1f ms", len(rows),
                  len(missing), (time.perf_counter() - started) * 1000)

    def scores(self, query: str, n_rows: int) -> np.ndarray:
        """BM25 score of every row 0..n_rows-1 for `query` (0 for rows not indexed or without a
        query term); rebuilds the index first if it changed since the last query."""
        if self._dirty:
            self._rebuild()
        out = np.zeros(n_rows, dtype=np.float32)
        if self._retriever is None:
            return out
        terms = tokenize([query])[0]
        if not terms:
            return out
        try:
            doc_scores = self._retriever.get_scores(terms)
        except Exception as exc:  # noqa: BLE001 - the library's own errors are not typed
            raise LexicalIndexError("BM25 scoring failed") from exc
        inside = self._rows < n_rows
        out[self._rows[inside]] = doc_scores[inside]
        return out
