"""The incremental BM25 index (issue 25): the scores `bm25s` gave when it rebuilt the index on
every change, without ever rebuilding it."""
import random

import bm25s
import numpy as np
import pytest
import Stemmer

from streams.memory import lexical_index
from streams.memory.lexical_index import LexicalIndex, tokenize

STEMMER = Stemmer.Stemmer("english")
WORDS = ["Ana", "dog", "dogs", "Luna", "adopted", "adopt", "Porto", "Lisbon", "sister", "cello",
         "plays", "playing", "marathon", "running", "runs", "rent", "euros", "July", "2023", "7",
         "München", "café", "naïve", "Ana's", "don't", "x", "data-science", "e-mail", "co-op",
         "the", "and", "of", "a", "is", "to", "in", "with", "UPPER", "MiXeD", "1,500", "3.5"]
"""Words people write (and stopwords, case, punctuation, accents, numbers, 1-letter words)."""


def old_scores(texts: dict[int, str], query: str, n_rows: int) -> np.ndarray:
    """What the index answered before issue 25: `bm25s` over the texts, rebuilt from them."""
    out = np.zeros(n_rows, dtype=np.float32)
    rows = sorted(texts)
    corpus = bm25s.tokenize([texts[r] for r in rows], stopwords="en", stemmer=STEMMER,
                            return_ids=False, show_progress=False) if rows else []
    if not any(corpus):
        return out
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    terms = bm25s.tokenize([query], stopwords="en", stemmer=STEMMER, return_ids=False,
                           show_progress=False)[0]
    if not terms:
        return out
    scores = retriever.get_scores(terms)
    at = np.asarray(rows)
    inside = at < n_rows
    out[at[inside]] = scores[inside]
    return out


def random_text(rng: random.Random, longest: int = 14) -> str:
    words = [rng.choice(WORDS[: rng.randint(3, len(WORDS))]) for _ in range(rng.randint(0, longest))]
    if rng.random() < 0.3:  # a word only this text has (a name, a number)
        words.append(f"w{rng.randint(0, 10 ** 6)}")
    return " ".join(words) + rng.choice(["", ".", "!", " (7 July 2023)"])


def assert_same(new: np.ndarray, old: np.ndarray) -> None:
    assert new.dtype == np.float32 and new.shape == old.shape
    assert np.array_equal(new == 0, old == 0), "the same rows match"
    assert np.allclose(new, old, rtol=1e-4, atol=0)


def test_stopwords_are_those_of_bm25s():
    assert lexical_index.STOPWORDS == set(bm25s.stopwords.STOPWORDS_EN)


def test_tokens_are_those_of_bm25s_tokenize():
    rng = random.Random(3)
    texts = [random_text(rng) for _ in range(300)] + ["", "the and of", "Hello, WORLD!! 42"]
    assert tokenize(texts) == bm25s.tokenize(texts, stopwords="en", stemmer=STEMMER,
                                             return_ids=False, show_progress=False)


@pytest.mark.parametrize("seed", range(6))
def test_scores_equal_bm25s_rebuilt_through_random_puts_and_discards(seed, monkeypatch):
    monkeypatch.setattr(lexical_index, "MERGE_MIN_ROWS", 8)  # merges happen within the test too
    rng = random.Random(seed)
    index, texts = LexicalIndex(), {}
    rows = 40 + 30 * seed
    for step in range(60):
        for _ in range(rng.choice([1, 1, 2, 5, 30])):
            row = rng.randrange(rows)
            if rng.random() < 0.25:
                index.discard(row)
                texts.pop(row, None)
            else:
                text = random_text(rng)
                index.put(row, text)
                texts[row] = text
        n_rows = rows if rng.random() < 0.8 else rng.randrange(rows)  # rows past n_rows: not scored
        query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
        assert_same(index.scores(query, n_rows), old_scores(texts, query, n_rows))
        assert len(index) == len(texts)
    assert index.merges > 1


def test_a_query_says_a_word_twice_counts_it_twice():
    index, texts = LexicalIndex(), {0: "Ana adopted a dog", 1: "Ana runs", 2: "a dog named Luna"}
    for row, text in texts.items():
        index.put(row, text)
    once, twice = index.scores("dog", 3), index.scores("dog dogs", 3)
    assert np.allclose(twice, 2 * once)
    assert_same(twice, old_scores(texts, "dog dogs", 3))


def test_empty_and_stopword_only_rows_count_in_the_corpus():
    index, texts = LexicalIndex(), {0: "the and of", 1: "", 2: "Ana adopted a dog", 3: "Ana runs"}
    for row, text in texts.items():
        index.put(row, text)
    assert_same(index.scores("Ana's dog", 4), old_scores(texts, "Ana's dog", 4))


def test_a_write_tokenises_nothing_and_the_next_query_only_the_changed_rows():
    rng = random.Random(11)
    index, texts = LexicalIndex(), {}
    for row in range(2000):
        texts[row] = random_text(rng)
        index.put(row, texts[row])
    assert index.tokenised == 0, "a put only records the text"
    index.scores("dog", 2000)
    assert (index.tokenised, index.merges) == (2000, 1)
    built = index.merged_postings
    for change in range(2000 // lexical_index.MERGE_FRACTION):  # below the merge threshold
        row = rng.randrange(2000)
        before = index.tokenised
        if rng.random() < 0.2 and row in texts:
            index.discard(row)
            del texts[row]
        else:
            texts[row] = random_text(rng)
            index.put(row, texts[row])
        assert index.tokenised == before, "a write does no work"
        assert_same(index.scores("Ana dog", 2000), old_scores(texts, "Ana dog", 2000))
        assert index.tokenised - before <= 2, "the old text out, the new one in: nothing else"
    assert (index.merges, index.merged_postings) == (1, built), "never rebuilt, never merged"
    index.scores("dog", 2000)
    assert index.tokenised <= 2000 + 2 * (2000 // lexical_index.MERGE_FRACTION), "reads: no work"


def test_merges_copy_a_bounded_number_of_postings_per_change():
    rng = random.Random(5)
    index, texts = LexicalIndex(), {}
    for row in range(1000):
        texts[row] = random_text(rng)
        index.put(row, texts[row])
    index.scores("dog", 1000)
    built, changes = index.merged_postings, 4000
    for _ in range(changes):
        row = rng.randrange(1500)
        texts[row] = random_text(rng)
        index.put(row, texts[row])
        index.scores("dog", 1500)
    per_text = max(len(set(t)) for t in tokenize(list(texts.values())))
    merged = index.merged_postings - built
    assert index.merges > 3
    assert merged <= (lexical_index.MERGE_FRACTION + 1) * changes * per_text
    assert_same(index.scores("Ana dog Luna", 1500), old_scores(texts, "Ana dog Luna", 1500))


def test_a_row_put_again_with_its_text_is_no_change():
    index = LexicalIndex()
    index.put(0, "Ana adopted a dog")
    index.scores("dog", 1)
    index.put(0, "Ana adopted a dog")
    index.put(1, "Ana runs")
    index.discard(1)  # written and taken out between two queries: nothing to apply
    index.discard(2)  # never indexed
    before = index.tokenised
    assert index.scores("dog", 3)[0] > 0 and index.tokenised == before
