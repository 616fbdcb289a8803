"""Questions whose answer takes several memories (streams/read/evidence.py and its use in
`streams.read.query.execute`): the kinds, the parts, each part's evidence in the answer, the
replaced value of a change, and a second memory of one turn yielding its place."""
import json
from datetime import datetime, timezone

import numpy as np
import pytest

from streams.memory.model import Memory
from streams.memory.vector_index import UserIndex
from streams.read.categories import load_policy
from streams.read.diversity import diversified_order
from streams.read.evidence import combining_kind, parts
from streams.read.query import execute, plan_query
from streams.read.token_budget import get_counter
from tests import defaults
from topics.query import QueryRequest

NOW = datetime(2024, 5, 15, 12, tzinfo=timezone.utc)
DIM = 16
Q = np.eye(DIM, dtype=np.float32)[0]
POLICY = load_policy()


@pytest.mark.parametrize(("question", "kind"), [
    ("What do Ana and Ben both like?", "both"),
    ("What hobbies do Ana and Ben have in common?", "both"),
    ("How many times did Ana go to the dentist?", "count"),
    ("How often does Ana swim?", "count"),
    ("Did Ana adopt the dog before or after her new job?", "order"),
    ("What did Ana do after she moved to Lisbon?", "order"),
    ("How has Ana's commute changed?", "change"),
    ("Where did Ana use to work?", "change"),
    ("What books has Ana read?", "list"),
    ("Where has Ana camped?", "list"),
    ("What is Ana's job?", None),
    ("Where does Ana live?", None),
])
def test_a_question_that_combines_facts_is_told_by_its_wording(question, kind):
    assert combining_kind(question) == kind


def test_a_question_splits_into_the_clauses_that_need_their_own_evidence():
    assert parts("Did Ana adopt the dog before or after her new job?") == [
        "Did Ana adopt the dog", "her new job"]
    # two names share the rest of the question: each one's evidence says what is asked
    assert parts("What do Ana and Ben both like?") == ["What do Ana both like", "What do Ben both like"]
    assert parts("Did Ana sign with Nike and Adidas?") == ["Did Ana sign with Nike", "Did Ana sign with Adidas"]
    assert parts("How has Ana's commute changed?") == ["How has Ana's commute changed?"]


def test_a_second_memory_of_one_turn_yields_to_a_memory_of_another():
    """Three candidates, the first two from turn t1 and far apart in wording: the one from t2
    (lower score) comes second with the penalty, third without."""
    vectors = np.eye(3, dtype=np.float32)
    scores = np.array([1.0, 0.9, 0.85])
    sources = [["s:t1"], ["s:t1"], ["s:t2"]]
    assert diversified_order(scores, vectors, 0.2)[0] == [0, 1, 2]
    assert diversified_order(scores, vectors, 0.2, sources, 0.2)[0] == [0, 2, 1]


def mem(i: str, summary: str, **fields) -> Memory:
    base = dict(id=i, user_id="u", type="semantic", category="Personal", summary=summary,
                created_at=NOW, updated_at=NOW, last_accessed=NOW, source_turn_ids=[f"s:{i}"])
    return Memory(**{**base, **fields})


def vector(similarity: float, axis: int) -> np.ndarray:
    v = similarity * Q + np.sqrt(1 - similarity ** 2) * np.eye(DIM, dtype=np.float32)[axis]
    return v.astype(np.float32)


def index_of(*pairs: tuple[Memory, float]) -> UserIndex:
    index = UserIndex(DIM)
    for axis, (memory, similarity) in enumerate(pairs, start=1):
        index.upsert(memory, vector(similarity, axis))
    return index


def ask(index: UserIndex, query: str, top_k: int, gather: bool = True) -> list[str]:
    request = QueryRequest.model_validate_json(json.dumps(
        {"agent": "supervisor", "query": query, "top_k": top_k}))
    plan = plan_query(request, "u", POLICY, defaults.limits(gather_evidence=gather), NOW)
    response, _ = execute(index, Q, plan, POLICY, defaults.weights(), get_counter(),
                          retrieval=defaults.retrieval())
    return [item["id"] for item in response.items]


def test_each_part_of_a_question_has_its_evidence_in_the_answer():
    """"before or after": the dog and the job each need a memory. Four memories about the dog
    match the question best (its vector and its words); the job's only by its own words. Ranked
    one by one, the answer of three is all dog; gathered, the job is in it."""
    index = index_of(
        (mem("dog1", "Ana adopted a dog called Rex."), 0.9),
        (mem("dog2", "Ana walks the dog every morning."), 0.88),
        (mem("dog3", "The dog sleeps on Ana's bed."), 0.87),
        (mem("dog4", "Ana bought the dog a red collar."), 0.86),
        (mem("job", "Ana started a new job at the bakery."), 0.3),
        *[(mem(f"other{i}", f"Ana likes colour {i}."), 0.2) for i in range(6)],
    )
    question = "Did Ana adopt the dog before or after her new job?"
    assert "job" not in ask(index, question, 3, gather=False)
    assert "job" in ask(index, question, 3)


def test_a_question_about_a_change_is_answered_with_the_value_before_too():
    old = mem("old", "Ana commutes by car.", state="superseded", superseded_by="new")
    new = mem("new", "Ana commutes by bike now.")
    index = index_of((old, 0.8), (new, 0.8), (mem("x", "Ana likes tea."), 0.1))
    assert ask(index, "How has Ana's commute changed?", 2, gather=False) == ["new", "x"]
    got = ask(index, "How has Ana's commute changed?", 2)
    assert set(got) == {"old", "new"}
    # a question one memory answers never gets the replaced value
    assert "old" not in ask(index, "How does Ana commute?", 2)


def test_a_replaced_value_says_so_in_the_context():
    old = mem("old", "Ana commutes by car.", state="superseded", superseded_by="new")
    index = index_of((old, 0.8), (mem("new", "Ana commutes by bike now."), 0.8))
    request = QueryRequest.model_validate_json(json.dumps(
        {"agent": "supervisor", "query": "How has Ana's commute changed?", "top_k": 2}))
    plan = plan_query(request, "u", POLICY, defaults.limits(), NOW)
    response, _ = execute(index, Q, plan, POLICY, defaults.weights(), get_counter(),
                          retrieval=defaults.retrieval())
    assert "Ana commutes by car. (replaced since)" in response.context.replace("] (replaced since) ", "] ") or \
        "(replaced since) Ana commutes by car." in response.context
    assert response.cold_tier == "combining"


def test_each_parts_evidence_stands_in_the_first_five_places_and_is_never_displaced():
    """Twelve memories about the dog match best; the job's memory is the answer's by its part
    only. In an answer of ten it stands within the first five (not last, below nine
    paraphrases of the dog), with scores still non-increasing; the two memories said next to
    the best hit (its neighbours) displace other items, never it."""
    at = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
    dogs = [(mem(f"dog{i}", f"Ana's dog {w} today.", created_at=at, thread_id=f"s{i + 1}"), 0.9 - i / 100)
            for i, w in enumerate(["barked", "slept", "ran", "ate", "played", "swam", "hid", "dug",
                                   "howled", "chewed", "jumped", "rolled"])]
    nearby = [(mem(f"near{i}", f"Ana bought flowers {i}.", created_at=at, thread_id="s1"), 0.25)
              for i in range(2)]
    index = index_of(*dogs, (mem("job", "Ana started a new job at the bakery."), 0.3), *nearby)
    question = "Did Ana get the dog before or after her new job?"
    request = QueryRequest.model_validate_json(json.dumps(
        {"agent": "supervisor", "query": question, "top_k": 10}))
    plan = plan_query(request, "u", POLICY, defaults.limits(), NOW)
    response, _ = execute(index, Q, plan, POLICY, defaults.weights(), get_counter(),
                          retrieval=defaults.retrieval())
    got = [item["id"] for item in response.items]
    assert "job" in got[:5]
    assert {"near0", "near1"} <= set(got), "the neighbours took their places"
    scores = [item["score"] for item in response.items]
    assert scores == sorted(scores, reverse=True)
