"""memory.query execution: filters before ranking, weights, threshold, slots, budget, delta."""
import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from streams.read.categories import CategoryPolicy, load_policy
from streams.memory.model import Memory
from streams.read.query import execute, plan_query
from streams.read.errors import InvalidQuery
from streams.read.ranking import RankWeights
from streams.read.token_budget import get_counter
from streams.memory.vector_index import UserIndex
from topics.query import QueryRequest
from tests import defaults

NOW = datetime(2024, 5, 15, 12, tzinfo=timezone.utc)
DIM = 16
Q = np.eye(DIM, dtype=np.float32)[0]
POLICY = load_policy()


def vector(similarity: float, axis: int) -> np.ndarray:
    """A unit vector with cosine `similarity` to Q (each memory on its own orthogonal axis)."""
    v = similarity * Q + np.sqrt(1 - similarity ** 2) * np.eye(DIM, dtype=np.float32)[axis]
    return v.astype(np.float32)


def mem(i: str, **fields) -> Memory:
    base = dict(id=i, user_id="u", type="semantic", category="Personal", summary=f"Ana fact {i}.",
                created_at=NOW, updated_at=NOW, last_accessed=NOW)
    return Memory(**{**base, **fields})


def index_of(*pairs: tuple[Memory, float]) -> UserIndex:
    index = UserIndex(DIM)
    for axis, (memory, similarity) in enumerate(pairs, start=1):
        index.upsert(memory, vector(similarity, axis))
    return index


DENSE = defaults.retrieval(mode="dense")


def ask(index: UserIndex, policy: CategoryPolicy = POLICY, weights: RankWeights = defaults.weights(),
        delta=None, **fields):
    request = QueryRequest.model_validate_json(
        json.dumps({"agent": "supervisor", "query": "what about Ana", **fields}))
    plan = plan_query(request, "u", policy, defaults.limits(), NOW)
    return execute(index, Q, plan, policy, weights, get_counter(), delta, DENSE)


def ids(response) -> list[str]:
    return [item["id"] for item in response[0].items]


def test_each_filter_narrows_before_ranking():
    index = index_of(
        (mem("a", agent_id="planner", run_id="r1", actor_id="x", role="user", pinned=True,
             importance=5, updated_at=NOW - timedelta(days=40)), 0.5),
        (mem("b", agent_id="stylist", run_id="r2", actor_id="y", role="assistant", category="Goals",
             importance=2), 0.9),
        (mem("c", state="superseded"), 0.99),
        (mem("d", state="soft_deleted"), 0.98),
    )
    assert sorted(ids(ask(index, top_k=10))) == ["a", "b"], "inactive memories are never returned"
    for filters, expected in [
        ({"agent_id": "planner"}, ["a"]), ({"run_id": "r2"}, ["b"]), ({"actor_id": "x"}, ["a"]),
        ({"role": "assistant"}, ["b"]), ({"category": "Goals"}, ["b"]), ({"pinned": True}, ["a"]),
        ({"pinned": False}, ["b"]), ({"importance_min": 3}, ["a"]), ({"importance_max": 3}, ["b"]),
        ({"updated_after": (NOW - timedelta(days=1)).isoformat()}, ["b"]),
        ({"updated_before": "2024-04-30"}, ["a"]), ({"user_id": "u", "agent_id": "nobody"}, []),
    ]:
        assert ids(ask(index, top_k=10, filters=filters)) == expected, filters


def test_a_filter_on_another_user_is_an_error_not_a_wider_search():
    with pytest.raises(InvalidQuery, match="user of the route"):
        ask(index_of((mem("a"), 0.9)), filters={"user_id": "someone-else"})


def test_allowlist_is_enforced_whatever_the_request_says():
    policy = CategoryPolicy.from_yaml(
        "categories: {system: [{name: Personal}, {name: Finance}]}\n"
        "allowlists: {supervisor: [Personal]}")
    index = index_of((mem("money", category="Finance"), 0.99), (mem("me"), 0.5),
                     (mem("odd", category="Unlisted"), 0.98))
    assert ids(ask(index, policy, top_k=10)) == ["me"]


def test_weights_are_configurable_and_related_strength_boosts():
    # "linked" has an edge to a memory outside this index: an edge to "similar" would be
    # served on both ends, and boost both.
    index = index_of((mem("similar", importance=1), 0.9), (mem("important", importance=5), 0.7),
                     (mem("linked", importance=1, relations={"elsewhere": 0.9}), 0.85))
    # On the raw relevance (as docs/architecture.md#read-path writes the formula) importance 5 outweighs 0.2 of
    # cosine; scaled over the pool (the default) that 0.2 is the pool's whole spread, so the
    # similarity weight (0.55) outweighs the importance one.
    seed = defaults.weights(relevance_norm="raw", importance=0.20, recency=0.15)  # seed 002's weights
    assert ids(ask(index, weights=seed, top_k=3))[0] == "important"
    assert ids(ask(index, top_k=3)) == ["similar", "linked", "important"]
    assert ids(ask(index, weights=defaults.weights(similarity=1, importance=0, recency=0, pinned=0,
                                              related=0), top_k=3)) == ["similar", "linked", "important"]
    assert ids(ask(index, weights=defaults.weights(similarity=1, importance=0, recency=0, pinned=0,
                                              related=1), top_k=3))[0] == "linked"


def test_threshold_drops_low_scores_except_context_all_categories():
    index = index_of((mem("close", category="Other"), 0.8), (mem("far", category="Other"), 0.3),
                     (mem("profile", category="Personal"), 0.2))
    # scores (the fallback curve, dense): 0.8 -> 0.34, 0.3 -> 0.006, 0.2 -> 0.004
    assert ids(ask(index, top_k=5, threshold=0.1)) == ["close", "profile"]  # Personal: context all


def test_top_k_and_return_modes():
    index = index_of(*[(mem(str(i), related_ids=[], importance=3), 0.9 - i / 100) for i in range(6)])
    bullets = ask(index, top_k=2)[0]
    assert [set(i) for i in bullets.items] == [
        {"id", "category", "type", "text", "tokens", "archived", "score"}] * 2
    assert bullets.items[0]["text"] == "[Personal] Ana fact 0."
    full = ask(index, top_k=2, **{"return": "full"})[0]
    assert {"summary", "score", "source_turn_ids", "related", "importance"} <= set(full.items[0])
    assert "embedding_b64" not in full.items[0]


def episodes(n: int, similarity: float) -> list[tuple[Memory, float]]:
    return [(mem(f"e{i}", type="episodic", category="Conversation_Summary",
                 date_iso=f"2024-05-0{i + 1}"), similarity) for i in range(n)]


def facts(n: int, similarity: float) -> list[tuple[Memory, float]]:
    return [(mem(f"s{i}"), similarity) for i in range(n)]


def kinds(response) -> list[str]:
    return [item["type"] for item in response[0].items]


def test_one_to_three_episodic_items_and_the_rest_semantic():
    assert kinds(ask(index_of(*episodes(5, 0.5), *facts(5, 0.9)), top_k=4, query="Ana's dog")
                 ).count("episodic") == 1, "one slot is kept for episodic"
    assert kinds(ask(index_of(*episodes(5, 0.5), *facts(5, 0.9)), top_k=1, query="Ana's dog")
                 ) == ["semantic"], "top_k=1 is the best item"
    assert kinds(ask(index_of(*episodes(5, 0.95), *facts(5, 0.6)), top_k=10, query="Ana's dog")
                 ).count("episodic") == 3, "at most three, however similar"
    assert len(ask(index_of(*episodes(5, 0.95)), top_k=4, query="Ana's dog")[0].items) == 3
    recall = ask(index_of(*episodes(5, 0.95), *facts(5, 0.6)), top_k=6, query="what did we discuss?")
    assert recall[0].recall_intent and kinds(recall).count("episodic") == 5


def test_dated_event_facts_are_not_held_to_the_episode_slots():
    """An event the extractor wrote from one turn is typed episodic but is a fact about the
    user: it competes on score; only conversation episodes are capped at three."""
    events = [(mem(f"v{i}", type="episodic", category="Personal", date_iso=f"2024-05-0{i + 1}"),
               0.95) for i in range(5)]
    assert kinds(ask(index_of(*events, *facts(5, 0.6)), top_k=10, query="Ana's dog")
                 ).count("episodic") == 5


def test_one_candidate_pool_by_similarity_for_both_types():
    """Candidates are the most similar items whatever their type (a pool per type would let
    important but barely similar items outrank the relevant ones); episodic items beyond the
    pool come in only for the kept slot."""
    index = index_of(*[(mem(f"s{i}", importance=1), 0.8) for i in range(4)],
                     *[(mem(f"v{i}", type="episodic", importance=5, pinned=True,
                            date_iso="2024-05-01"), 0.5) for i in range(4)])
    request = QueryRequest.model_validate_json(json.dumps({"agent": "supervisor",
                                                           "query": "Ana", "top_k": 4}))
    plan = plan_query(request, "u", POLICY, defaults.limits(candidates=4), NOW)
    response, _ = execute(index, Q, plan, POLICY, defaults.weights(), get_counter())
    assert kinds((response,)).count("episodic") == 1


def test_time_phrase_filters_episodic_buckets_only():
    index = index_of(
        (mem("week", type="episodic", category="Conversation_Summary", date_iso="2024-05-08"), 0.5),
        (mem("march", type="episodic", category="Conversation_Summary", date_iso="2024-03-10"), 0.9),
        (mem("fact"), 0.4))
    answer = ask(index, top_k=5, query="what did we discuss last week")[0]
    assert sorted(ids((answer, None))) == ["fact", "week"]
    assert (str(answer.time_window.start), str(answer.time_window.end)) == ("2024-05-06", "2024-05-12")
    march = ask(index, top_k=5, query="what did we talk about in March")[0]
    assert sorted(i["id"] for i in march.items) == ["fact", "march"]


def test_rag_length_caps_a_category():
    policy = CategoryPolicy.from_yaml(
        "categories: {system: [{name: Personal, rag_length: 2}, {name: Other}]}\n"
        "allowlists: {supervisor: [Personal, Other]}")
    index = index_of(*[(mem(f"p{i}"), 0.9) for i in range(4)], (mem("o", category="Other"), 0.1))
    answer = ask(index, policy, top_k=4, threshold=0.0)[0]  # "o" scores ~0.001
    assert [i["category"] for i in answer.items].count("Personal") == 2 and len(answer.items) == 3


def test_budget_counts_real_tokens_and_is_never_exceeded():
    long = "Ana keeps a detailed list of every book she read, with authors, years and notes on each."
    index = index_of(*[(mem(f"m{i}", summary=long if i % 2 else f"Ana likes tea {i}."), 0.9 - i / 100)
                       for i in range(8)])
    counter = get_counter()
    unbounded = ask(index, top_k=8)[0]
    assert unbounded.tokens == counter.count(unbounded.context) and unbounded.dropped_for_budget == 0
    for budget in (5, 30, 60, 120):
        answer = ask(index, top_k=8, budget_tokens=budget)[0]
        assert answer.tokens <= budget and counter.count(answer.context) == answer.tokens
        assert len(answer.items) + answer.dropped_for_budget == 8
    assert len(ask(index, top_k=8, budget_tokens=30)[0].items) >= 3, "short items still fit after a long one"


def test_delta_header_comes_first_and_counts_against_the_budget():
    index = index_of((mem("a"), 0.9))
    header = ("Memory updates since rev 2:\n- +created: [Personal] Ana adopted Luna (imp=4)\n"
              "- ↑updated: [Goals] Ship v1 by Sep (imp=3)")
    answer = ask(index, top_k=3, delta=(4, 2, header), since_rev=2, thread_id="t")[0]
    assert answer.context.startswith("Memory updates since rev 2:\n- +created")
    assert answer.delta.rev == 4 and answer.tokens == get_counter().count(answer.context)
    tight = ask(index, top_k=3, delta=(4, 2, header), since_rev=2, thread_id="t", budget_tokens=25)[0]
    assert tight.tokens <= 25 and tight.delta.header.count("\n- ") <= 1


def test_limits_are_errors():
    with pytest.raises(InvalidQuery, match="top_k"):
        ask(index_of((mem("a"), 0.9)), top_k=101)
    with pytest.raises(InvalidQuery, match="budget_tokens"):
        ask(index_of((mem("a"), 0.9)), budget_tokens=10**6)


def test_empty_index_answers_nothing():
    answer = ask(UserIndex(DIM), top_k=3)[0]
    assert answer.items == [] and answer.context == "" and answer.tokens == 0


def test_index_best_falls_back_to_a_full_sort_when_accept_refuses_the_top_rows():
    index = index_of(*[(mem(f"m{i:02d}", run_id="skip" if i < 12 else "keep"), 0.99 - i / 100)
                       for i in range(14)])
    scores = index.similarities(Q)
    every = np.ones(len(index), dtype=bool)
    assert [m.id for m, _ in index.best(scores, every, 2)] == ["m00", "m01"]
    kept = index.best(scores, every, 2, accept=lambda m: m.run_id == "keep")
    assert [m.id for m, _ in kept] == ["m12", "m13"]


def test_a_value_whose_change_waits_for_consent_is_served_with_the_change_pending():
    from streams.memory.model import PendingChange

    waiting = PendingChange(proposal_id="consent:1", field="city",
                            proposed_summary="Ana lives in Berlin.", expires_at=NOW)
    index = index_of((mem("city", importance=3, summary="Ana lives in Lisbon.",
                          pending_change=waiting), 0.9))
    response, _ = ask(index, top_k=1)
    assert response.items[0]["text"] == (
        "[Personal] Ana lives in Lisbon. (change pending: Ana lives in Berlin.)")
