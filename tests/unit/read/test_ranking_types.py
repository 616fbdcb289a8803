"""Ranking by type: queries prefer consolidated memories, insights weigh little (seed 000 §5,
seed 001 §3)."""
from __future__ import annotations

from streams.settings import Settings
from streams.read.ranking import score, weights_of
from tests.unit.read.test_query_execute import NOW, ask, ids, index_of, mem, vector
from tests import defaults


def test_a_consolidated_memory_outranks_an_equally_similar_episode():
    episode = mem("e", type="episodic", category="Conversation_Summary")
    consolidated = mem("c", type="consolidated", category="Conversation_Summary")
    w = defaults.weights()
    assert score(consolidated, 0.8, NOW, w) > score(episode, 0.8, NOW, w)
    assert ids(ask(index_of((episode, 0.8), (consolidated, 0.79)), top_k=1)) == ["c"]


def test_an_insight_weighs_less_than_a_fact_of_the_same_similarity():
    insight = mem("i", type="insight", category="Relationship_Dynamic", importance=2)
    fact = mem("f", importance=2)
    w = defaults.weights()
    assert score(insight, 0.8, NOW, w) == score(fact, 0.8, NOW, w) - w.insight
    assert ids(ask(index_of((insight, 0.8), (fact, 0.75)), top_k=2)) == ["f", "i"]


def test_the_type_weights_come_from_the_settings():
    w = weights_of(Settings(rank_w_consolidated=0.2, rank_w_insight=0.3).read)  # type: ignore[call-arg]
    assert (w.consolidated, w.insight) == (0.2, 0.3)


def test_a_consolidated_memory_is_found_by_what_its_archived_originals_said():
    original = mem("o", type="episodic", category="Conversation_Summary", state="archived")
    consolidated = mem("c", type="consolidated", category="Conversation_Summary",
                       consolidated_from=["o"])
    other = mem("x")
    index = index_of((original, 0.95), (consolidated, 0.3), (other, 0.6))
    [first, second] = ask(index, top_k=2, explain=True, **{"return": "full"})[0].items
    assert first["id"] == "c" and first["explain"]["similarity"] > 0.9, "lifted to its original's cosine"
    assert "o" not in ids(ask(index, top_k=5)), "the archived original itself is never returned"
    index.upsert(mem("c2", type="consolidated", category="Conversation_Summary",
                     consolidated_from=["o"]), vector(0.2, 9))
    assert set(ids(ask(index, top_k=2))) == {"c", "c2"}, \
        "a consolidated memory added later is lifted too (rows are scanned as they come)"
