"""Hybrid retrieval: the per-user BM25 index kept in step with the memories, and its fusion."""
import json
from datetime import datetime, timezone

import numpy as np
import pytest

from streams.settings import Settings
from benchmarks.recall import RawTurnBaseline
from streams.memory.lexical_index import LexicalIndex, tokenize
from streams.memory.model import Memory
from streams.memory.vector_index import UserIndex, VectorIndex
from streams.read.categories import load_policy
from streams.read.fusion import Retrieval, blend, relevance, rrf
from streams.read.query import execute, plan_query, rank
from streams.read.token_budget import get_counter
from topics.query import QueryRequest
from topics.turns import Turn
from tests import defaults

NOW = datetime(2024, 5, 15, 12, tzinfo=timezone.utc)
DIM = 16
Q = np.eye(DIM, dtype=np.float32)[0]
HYBRID = defaults.retrieval(mode="hybrid")
DENSE = defaults.retrieval(mode="dense")


def vector(similarity: float, axis: int) -> np.ndarray:
    """A unit vector with cosine `similarity` to Q (each memory on its own orthogonal axis)."""
    v = similarity * Q + np.sqrt(1 - similarity ** 2) * np.eye(DIM, dtype=np.float32)[axis]
    return v.astype(np.float32)


def mem(i: str, summary: str, **fields) -> Memory:
    base = dict(id=i, user_id="u", type="semantic", category="Personal", summary=summary,
                created_at=NOW, updated_at=NOW, last_accessed=NOW)
    return Memory(**{**base, **fields})


def lexical_of(index: UserIndex, text: str) -> dict[str, float]:
    scores = index.lexical_scores(text)
    return {mid: float(scores[row]) for row, mid in enumerate(index.ids)}


# --- the lexical index follows the memories -------------------------------------------------
def test_tokens_are_stemmed_and_drop_stopwords():
    assert tokenize(["The dogs were adopted"]) == [["dog", "were", "adopt"]]


def test_added_memory_is_found_by_its_words():
    index = UserIndex(DIM)
    index.upsert(mem("a", "Ana adopted a dog named Luna."), vector(0.1, 1))
    index.upsert(mem("b", "Ana works as a nurse in Porto."), vector(0.1, 2))
    scores = lexical_of(index, "Which dogs did Ana adopt?")
    assert scores["a"] > 3 * scores["b"] > 0  # "ana" is in both: a low idf
    index.upsert(mem("c", "Ana's dog Luna loves the beach."), vector(0.1, 3))
    assert lexical_of(index, "dog")["c"] > 0  # the index took the memory added after a query


def test_a_memory_is_found_by_an_entity_its_summary_does_not_name():
    index = UserIndex(DIM)
    index.upsert(mem("a", "It's special to Ana.", entities=["Lake Tahoe"]), vector(0.1, 1))
    index.upsert(mem("b", "Ana works as a nurse."), vector(0.1, 2))
    scores = lexical_of(index, "What did she paint at Lake Tahoe?")
    assert scores["a"] > 0 and scores["b"] == 0


def test_a_memory_is_found_by_the_month_it_was_said_in():
    july = datetime(2023, 7, 7, 20, tzinfo=timezone.utc)
    index = UserIndex(DIM)
    index.upsert(mem("a", "Ana is off to dinner with friends.", created_at=july), vector(0.1, 1))
    index.upsert(mem("b", "Ana is off to the gym."), vector(0.1, 2))
    index.upsert(mem("c", "Ana ate out.", type="episodic", date_iso="2023-07-08"), vector(0.1, 3))
    scores = lexical_of(index, "What did Ana do in the evening, early July 2023?")
    assert scores["a"] > scores["b"] and scores["c"] > scores["b"]


def test_superseded_deleted_and_restored_memories_leave_and_rejoin_the_index():
    index = UserIndex(DIM)
    luna = mem("a", "Ana adopted a dog named Luna.")
    index.upsert(luna, vector(0.1, 1))
    index.upsert(mem("b", "Ana works as a nurse."), vector(0.1, 2))
    assert lexical_of(index, "Luna")["a"] > 0
    index.update_doc(luna.model_copy(update={"state": "superseded"}))  # as MemoryState.store does
    assert lexical_of(index, "Luna")["a"] == 0
    index.update_doc(luna.model_copy(update={"state": "deleted"}))
    assert lexical_of(index, "Luna")["a"] == 0
    index.update_doc(luna)  # restored
    assert lexical_of(index, "Luna")["a"] > 0


def test_a_new_summary_replaces_the_old_words():
    index = UserIndex(DIM)
    index.upsert(mem("a", "Luna is 3 years old."), vector(0.1, 1))
    index.upsert(mem("b", "Ana works as a nurse."), vector(0.1, 2))
    assert lexical_of(index, "old")["a"] > 0
    index.upsert(mem("a", "Luna turned four last week."), vector(0.2, 1))
    assert lexical_of(index, "old")["a"] == 0
    assert lexical_of(index, "turned")["a"] > 0


def test_updated_in_place_after_a_change_untouched_by_a_read():
    index = UserIndex(DIM)
    luna = mem("a", "Ana adopted a dog named Luna.")
    index.upsert(luna, vector(0.1, 1))
    index.lexical_scores("dog")
    index.lexical_scores("cat")
    assert index.lexical.tokenised == 1
    index.update_doc(luna.model_copy(update={"access_count": 3}))  # a read refreshing access
    index.lexical_scores("dog")
    assert index.lexical.tokenised == 1
    index.upsert(mem("b", "Ana works as a nurse."), vector(0.1, 2))
    index.lexical_scores("dog")
    assert index.lexical.tokenised == 2  # the new memory only: nothing rebuilt


def test_dropping_a_user_drops_their_lexical_index():
    vectors = VectorIndex(DIM)
    vectors.user("u").upsert(mem("a", "Ana adopted a dog named Luna."), vector(0.1, 1))
    assert vectors.user("u").lexical_scores("dog").max() > 0
    vectors.drop_user("u")
    assert vectors.user("u").lexical_scores("dog").size == 0


def test_empty_and_stopword_only_texts_score_nothing():
    lexical = LexicalIndex()
    assert lexical.scores("dog", 3).tolist() == [0, 0, 0]
    lexical.put(0, "the and of")
    assert lexical.scores("the", 1).tolist() == [0]
    lexical.put(1, "a dog")
    assert lexical.scores("of the", 2).tolist() == [0, 0]


# --- fusion ---------------------------------------------------------------------------------
def test_blend_is_a_convex_combination_of_cosine_and_normalised_bm25():
    dense = np.array([0.5, 0.4, 0.3], dtype=np.float32)
    lexical = np.array([0.0, 2.0, 4.0], dtype=np.float32)
    fused = blend(dense, lexical, np.ones(3, dtype=bool), 0.7)
    assert np.allclose(fused, [0.35, 0.28 + 0.15, 0.21 + 0.3])
    assert list(np.argsort(-fused)) == [2, 1, 0]


def test_blend_normalises_bm25_over_the_returnable_rows_only():
    dense = np.zeros(3, dtype=np.float32)
    lexical = np.array([1.0, 2.0, 8.0], dtype=np.float32)
    fused = blend(dense, lexical, np.array([True, True, False]), 0.5)
    assert np.isclose(fused[1], 0.5)  # the best returnable BM25 is 2, not the filtered 8


def test_blend_without_any_term_match_keeps_the_dense_order():
    dense = np.array([0.2, 0.6, 0.4], dtype=np.float32)
    fused = blend(dense, np.zeros(3, dtype=np.float32), np.ones(3, dtype=bool), 0.7)
    assert list(np.argsort(-fused)) == list(np.argsort(-dense))


def test_rrf_sums_reciprocal_ranks_scaled_to_one_for_first_in_both():
    dense = np.array([0.9, 0.5, 0.1], dtype=np.float32)
    lexical = np.array([3.0, 0.0, 5.0], dtype=np.float32)
    fused = rrf(dense, lexical, np.ones(3, dtype=bool), k=60)
    scale = 61 / 2
    assert np.isclose(fused[0], (1 / 61 + 1 / 62) * scale)  # dense 1st, lexical 2nd
    assert np.isclose(fused[1], (1 / 62) * scale)  # no lexical match: no lexical term
    assert np.isclose(fused[2], (1 / 63 + 1 / 61) * scale)
    assert list(np.argsort(-fused)) == [0, 2, 1]
    both_first = rrf(np.array([1.0]), np.array([1.0]), np.ones(1, dtype=bool), k=60)
    assert np.isclose(both_first[0], 1.0)


def test_dense_mode_is_the_cosine():
    index = UserIndex(DIM)
    index.upsert(mem("a", "Ana plays the saxophone."), vector(0.3, 1))
    cosines = index.similarities(Q)
    assert relevance(index, cosines, "saxophone", np.ones(1, dtype=bool), DENSE) is cosines


# --- a query that only the lexical match finds ----------------------------------------------
def saxophone_index() -> UserIndex:
    index = UserIndex(DIM)
    for i in range(5):  # closer in embedding space, no shared word
        index.upsert(mem(f"d{i}", f"Ana went hiking in the mountains with friend {i}."),
                     vector(0.4, i + 1))
    index.upsert(mem("sax", "Ana bought a Selmer saxophone."), vector(0.2, 8))
    return index


def ask(index: UserIndex, retrieval: Retrieval, text: str = "Which saxophone did Ana buy?") -> list[str]:
    request = QueryRequest.model_validate_json(json.dumps({"agent": "supervisor", "query": text, "top_k": 3}))
    plan = plan_query(request, "u", load_policy(), defaults.limits(), NOW)
    response, hits = execute(index, Q, plan, load_policy(), defaults.weights(), get_counter(), None, retrieval)
    return [h.memory.id for h in hits]


def test_only_the_lexical_match_finds_the_memory():
    index = saxophone_index()
    assert "sax" not in ask(index, DENSE)
    assert ask(index, HYBRID)[0] == "sax"


def test_hits_keep_the_cosine_as_similarity_and_the_fused_relevance_apart():
    index = saxophone_index()
    request = QueryRequest.model_validate_json(json.dumps(
        {"agent": "supervisor", "query": "Which saxophone did Ana buy?", "top_k": 1}))
    plan = plan_query(request, "u", load_policy(), defaults.limits(), NOW)
    _, hits = execute(index, Q, plan, load_policy(), defaults.weights(), get_counter(), None, HYBRID)
    assert hits[0].similarity == pytest.approx(0.2, abs=1e-3)  # float16 storage (encode_vector)
    assert hits[0].relevance == pytest.approx(0.7 * hits[0].similarity + 0.3, abs=1e-5)


def test_rank_uses_the_query_text_in_hybrid_mode():
    index = saxophone_index()
    dense = rank(index, Q, top_k=3, candidates=24, weights=defaults.weights())
    hybrid = rank(index, Q, top_k=3, candidates=24, weights=defaults.weights(),
                  text="Which saxophone did Ana buy?", retrieval=HYBRID)
    assert "sax" not in [h.memory.id for h in dense]
    assert hybrid[0].memory.id == "sax"


def test_a_filtered_out_memory_is_not_returned_by_its_words():
    index = saxophone_index()
    index.update_doc(index.docs["sax"].model_copy(update={"state": "deleted"}))
    assert "sax" not in ask(index, HYBRID)


# --- the hybrid raw-turn baseline -----------------------------------------------------------
def test_raw_turn_baseline_with_hybrid_retrieval_finds_a_lexical_match():
    def fake_embed(texts):
        return np.asarray([vector(0.2 if "saxophone" in t else 0.4, 1 + i % 10)
                           for i, t in enumerate(texts)], dtype=np.float32)

    turns = [Turn(user_id="u", thread_id="s1", turn_id=f"D1:{i}", role="user", speaker="Ana",
                  text=text, ts=NOW)
             for i, text in enumerate(["We hiked all day.", "The mountains were cold.",
                                       "I bought a Selmer saxophone."], 1)]
    baseline = RawTurnBaseline(fake_embed)
    baseline.index(turns)
    dense = baseline.search("u", Q, 1)
    hybrid = baseline.search("u", Q, 1, text="What saxophone?", retrieval=HYBRID)
    assert dense[0][1] != ["s1:D1:3"]
    assert hybrid[0][1] == ["s1:D1:3"]


def test_settings_name_the_retrieval():
    settings = Settings(retrieval_mode="dense", retrieval_fusion="rrf", retrieval_rrf_k=10)
    assert Retrieval.of(settings.read) == defaults.retrieval(mode="dense", fusion="rrf", dense_weight=0.7, rrf_k=10)
