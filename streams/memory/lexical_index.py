"""BM25 over the texts of one user's searchable memories (summary, entities and the day said:
`vector_index.lexical_text`), the lexical half of hybrid retrieval.

Tokens are those of `bm25s.tokenize(texts, stopwords="en", stemmer=<Snowball english>)`, made
here one text at a time, 8x faster (a test checks they are equal): lower-cased words of two or
more characters (`\\b\\w\\w+\\b`), bm25s's English stopwords dropped, Snowball-stemmed
(PyStemmer), so "adopted" finds "adopt" and "dogs" finds "dog". The score is Lucene's BM25 as
`bm25s.BM25` computes it by default (method "lucene", k1 1.5, b 0.75):

    score(q, d) = sum over the tokens t of q of  idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))

where N counts every indexed row (even one without a token), avgdl is their mean token count and
a token the query says twice counts twice. Only searchable memories (active, and archived: the
cold tier) are indexed, so what was superseded or deleted counts neither as a match nor in N,
df or avgdl.

This module does not import `bm25s` (issue 22: no library picks a numeric backend here; bm25s
tries numba and JAX when imported, and picks JAX for its top-k when installed).

Why an inverted index of our own (issue 25): `bm25s` precomputes every (token, document) score
into one sparse matrix, and those scores depend on the corpus (df, avgdl), so it cannot add or
remove a document in place: the first query after any write rebuilt the user's whole matrix
(~114 ms at 10,000 memories), and a chatting user, who writes every turn, paid it on nearly every
query. Here the index keeps raw term frequencies and the corpus statistics apart (df per token,
token count per row, their total), so a change touches only the changed row's tokens, and a
query computes the scores of the postings of its own tokens only, vectorised with numpy.

The postings live in two segments:

- main: every token's postings (rows and term frequencies) in flat arrays sorted by token,
  made by a merge;
- recent: {token: {row: tf}} of the rows changed since that merge. A changed row is marked
  stale, and a query skips its postings in main (they are out of date, or the row left).

A write (`put`/`discard`, on every add, supersede, delete, restore) records the row's new text
and the text it had when last applied: a dict update, nothing tokenised, so rebuilding a
worker's index stays cheap and a user who never queries costs only the texts. The first query
after writes applies them (tokenises the old text of each changed row to take its counts out,
and the new one to put them in: two texts per change) and, once more rows changed since the
last merge than an eighth of those in main (and more than `MERGE_MIN_ROWS`), merges recent into
main (vectorised, nothing tokenised again; ~75 ms at 100,000 memories, once per 12,500 changes):
each posting is copied a bounded number of times, amortised, and the index is never rebuilt
from its texts. Once queried, the index holds about half the RAM the bm25s one did (the texts,
the vocabulary and 8 bytes a posting; no tokens kept per row).

Like the vector index this is a cache of the `memories` table: it lives in RAM and is made anew
with its `UserIndex` whenever the worker rebuilds the index from the table.
"""
from __future__ import annotations

import logging
import math
import re
import time
from collections import Counter

import numpy as np

from streams.language.stemming import stem_words
from streams.language.wordlists import word_list

log = logging.getLogger(__name__)

K1 = 1.5
B = 0.75
MERGE_MIN_ROWS = 64
"""Recent never triggers a merge below this many changed rows (a small user merges rarely)."""
MERGE_FRACTION = 8
"""Recent is merged into main once more rows changed than 1/MERGE_FRACTION of main's rows."""

_WORDS = re.compile(r"(?u)\b\w\w+\b").findall
STOPWORDS = word_list("stopwords_lucene")
"""Lucene's English stop set, as bm25s ships it (`bm25s.stopwords.STOPWORDS_EN`; a test checks):
streams/language/data/stopwords_lucene.txt."""


def tokenize_text(text: str) -> list[str]:
    """One text's BM25 tokens (see the module docstring for the rules)."""
    return stem_words([w for w in _WORDS(text.lower()) if w not in STOPWORDS])


def tokenize(texts: list[str]) -> list[list[str]]:
    """Each text's BM25 tokens (see the module docstring for the rules)."""
    return [tokenize_text(text) for text in texts]


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """`array` with room for at least `size` items (doubling; new items zero)."""
    if size <= array.size:
        return array
    out = np.zeros(max(size, 2 * array.size, 16), dtype=array.dtype)
    out[: array.size] = array
    return out


class LexicalIndex:
    """BM25 scores of a query over texts kept at integer rows (the rows of a `UserIndex`),
    updated in place (see the module docstring for the design)."""

    def __init__(self) -> None:
        self._texts: dict[int, str] = {}
        """row -> text, writes included (what `len` counts)."""
        self._before: dict[int, str | None] = {}
        """row -> its text when writes were last applied (None: not indexed), for the rows
        written since."""
        self._applied = False
        """Whether a query applied the writes yet; until then they record nothing but the texts
        (a rebuilt worker's index costs the texts alone) and the first query indexes them all."""
        self._vocab: dict[str, int] = {}
        self._df: list[int] = []
        """token id -> how many indexed rows have the token (a list: one increment per posting
        applied, several times faster than on a numpy array)."""
        self._lengths = np.zeros(0, dtype=np.int32)
        """row -> its token count (0 when not indexed)."""
        self._total_length = 0
        self._indexed = 0
        """Rows applied (N)."""
        self._indptr = np.zeros(1, dtype=np.int64)
        self._main_rows = np.zeros(0, dtype=np.int32)
        self._main_tfs = np.zeros(0, dtype=np.float32)
        self._main_size = 0
        """Rows indexed at the last merge."""
        self._recent: dict[int, dict[int, int]] = {}
        self._stale = np.zeros(0, dtype=bool)
        """row -> changed since the last merge (its postings in main are skipped)."""
        self._changed = 0
        self.tokenised = 0
        """Texts tokenised when applying writes (tests and benchmarks read these counters)."""
        self.merges = 0
        self.merged_postings = 0
        """Postings written into main by all merges."""

    def put(self, row: int, text: str) -> None:
        """Index `text` at `row` (replacing what was there)."""
        if self._texts.get(row) != text:
            if self._applied:
                self._before.setdefault(row, self._texts.get(row))
            self._texts[row] = text

    def discard(self, row: int) -> None:
        """Take `row` out of the index (a memory no longer visible)."""
        if row in self._texts:
            if self._applied:
                self._before.setdefault(row, self._texts[row])
            del self._texts[row]

    def __len__(self) -> int:
        return len(self._texts)

    def scores(self, query: str, n_rows: int) -> np.ndarray:
        """BM25 score of every row 0..n_rows-1 for `query` (0 for rows not indexed or without a
        query term); applies the writes made since the last query first."""
        self._apply()
        if not self._total_length:
            return np.zeros(n_rows, dtype=np.float32)
        out = np.zeros(max(n_rows, self._lengths.size), dtype=np.float64)
        avgdl = self._total_length / self._indexed
        for token, said in Counter(tokenize_text(query)).items():
            token_id = self._vocab.get(token)
            if token_id is None or not self._df[token_id]:
                continue
            df = self._df[token_id]
            idf = math.log(1 + (self._indexed - df + 0.5) / (df + 0.5))
            rows, tfs = self._postings(token_id)
            norm = K1 * (1 - B + B * self._lengths[rows] / avgdl)
            out[rows] += said * idf * tfs / (tfs + norm)  # rows are distinct within a token
        return out[:n_rows].astype(np.float32)

    def _postings(self, token_id: int) -> tuple[np.ndarray, np.ndarray]:
        """The (rows, term frequencies) of a token: main's, less its stale rows, and recent's."""
        start = end = 0
        if token_id + 1 < self._indptr.size:  # else a token new since the merge
            start, end = self._indptr[token_id], self._indptr[token_id + 1]
        rows, tfs = self._main_rows[start:end], self._main_tfs[start:end]
        if self._changed and rows.size:
            fresh = ~self._stale[rows]
            rows, tfs = rows[fresh], tfs[fresh]
        recent = self._recent.get(token_id)
        if recent:
            rows = np.concatenate([rows, np.fromiter(recent.keys(), np.int32, len(recent))])
            tfs = np.concatenate([tfs, np.fromiter(recent.values(), np.float32, len(recent))])
        return rows, tfs

    # --- applying writes ---------------------------------------------------------------------
    def _apply(self) -> None:
        """Apply the writes made since the last query, then merge if recent has grown enough."""
        if not self._applied:
            self._before = dict.fromkeys(self._texts)
            self._applied = True
        if not self._before:
            return
        for row, old in self._before.items():
            new = self._texts.get(row)
            if old == new:
                continue
            self._mark_stale(row)
            if old is not None:
                self._remove(row, old)
            if new is not None:
                self._add(row, new)
        self._before.clear()
        if self._changed > max(MERGE_MIN_ROWS, self._main_size // MERGE_FRACTION):
            self._merge()

    def _mark_stale(self, row: int) -> None:
        if row >= self._stale.size:
            self._stale = _grown(self._stale, row + 1)
            self._lengths = _grown(self._lengths, row + 1)
        if not self._stale[row]:
            self._stale[row] = True
            self._changed += 1

    def _remove(self, row: int, text: str) -> None:
        counts = Counter(tokenize_text(text))
        self.tokenised += 1
        for token in counts:
            token_id = self._vocab[token]
            self._df[token_id] -= 1
            recent = self._recent.get(token_id)
            if recent is not None:
                recent.pop(row, None)
                if not recent:
                    del self._recent[token_id]
        self._total_length -= int(self._lengths[row])
        self._lengths[row] = 0
        self._indexed -= 1

    def _add(self, row: int, text: str) -> None:
        tokens = tokenize_text(text)
        self.tokenised += 1
        for token, tf in Counter(tokens).items():
            token_id = self._vocab.setdefault(token, len(self._vocab))
            if token_id == len(self._df):
                self._df.append(0)
            self._df[token_id] += 1
            self._recent.setdefault(token_id, {})[row] = tf
        self._lengths[row] = len(tokens)
        self._total_length += len(tokens)
        self._indexed += 1

    def _merge(self) -> None:
        """Main := main's postings of rows not stale + recent's, sorted by token (vectorised)."""
        started = time.perf_counter()
        n_tokens = len(self._vocab)
        token_ids = np.repeat(np.arange(self._indptr.size - 1, dtype=np.int32),
                              np.diff(self._indptr))
        fresh = ~self._stale[self._main_rows]
        parts_tokens = [token_ids[fresh]]
        parts_rows = [self._main_rows[fresh]]
        parts_tfs = [self._main_tfs[fresh]]
        for token_id, postings in self._recent.items():
            parts_tokens.append(np.full(len(postings), token_id, dtype=np.int32))
            parts_rows.append(np.fromiter(postings.keys(), np.int32, len(postings)))
            parts_tfs.append(np.fromiter(postings.values(), np.float32, len(postings)))
        tokens = np.concatenate(parts_tokens)
        order = np.argsort(tokens, kind="stable")
        self._main_rows = np.concatenate(parts_rows)[order]
        self._main_tfs = np.concatenate(parts_tfs)[order]
        self._indptr = np.zeros(n_tokens + 1, dtype=np.int64)
        np.cumsum(np.bincount(tokens, minlength=n_tokens), out=self._indptr[1:])
        self._recent.clear()
        self._stale[:] = False
        self._changed = 0
        self._main_size = self._indexed
        self.merges += 1
        self.merged_postings += int(self._main_rows.size)
        log.debug("lexical index merged: %d rows, %d postings in %.1f ms", self._indexed,
                  self._main_rows.size, (time.perf_counter() - started) * 1000)
