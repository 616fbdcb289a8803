"""The neighbours of an answer's best hits (streams/read/neighbours.py): memories said in the
same thread minutes from them take the places after the first five."""
import json
from datetime import datetime, timedelta, timezone

import numpy as np

from streams.memory.model import Memory
from streams.memory.vector_index import UserIndex
from streams.read.categories import load_policy
from streams.read.query import execute, plan_query
from streams.read.token_budget import get_counter
from tests import defaults
from topics.query import QueryRequest

NOW = datetime(2024, 5, 15, 12, tzinfo=timezone.utc)
DIM = 32
Q = np.eye(DIM, dtype=np.float32)[0]
POLICY = load_policy()
DENSE = defaults.retrieval(mode="dense")


def vector(similarity: float, axis: int) -> np.ndarray:
    v = similarity * Q + np.sqrt(1 - similarity ** 2) * np.eye(DIM, dtype=np.float32)[axis]
    return v.astype(np.float32)


def mem(i: str, thread: str, at: datetime, turn: str | None = None) -> Memory:
    return Memory(id=i, user_id="u", type="semantic", category="Personal", summary=f"Ana fact {i}.",
                  created_at=at, updated_at=NOW, last_accessed=NOW, thread_id=thread,
                  source_turn_ids=[f"{thread}:{turn or i}"])


def index_of(*pairs: tuple[Memory, float]) -> UserIndex:
    index = UserIndex(DIM)
    for axis, (memory, similarity) in enumerate(pairs, start=1):
        index.upsert(memory, vector(similarity, axis))
    return index


def answer(index: UserIndex, top_k: int = 10, slots: int | None = None,
           related_slots: int | None = None) -> list[str]:
    request = QueryRequest.model_validate_json(json.dumps(
        {"agent": "supervisor", "query": "what about Ana", "top_k": top_k, "return": "full"}))
    changes = {"neighbour_slots": slots, "related_slots": related_slots}
    limits = defaults.limits(**{k: v for k, v in changes.items() if v is not None})
    plan = plan_query(request, "u", POLICY, limits, NOW)
    response, hits = execute(index, Q, plan, POLICY, defaults.weights(), get_counter(), retrieval=DENSE)
    assert [h.memory.id for h in hits] == [item["id"] for item in response.items]
    scores = [item["score"] for item in response.items]
    assert scores == sorted(scores, reverse=True), "scores stay non-increasing along the answer"
    return [item["id"] for item in response.items]


def fillers(n: int = 10) -> list[tuple[Memory, float]]:
    """Memories more similar than the neighbours, each said in a thread of its own, days apart."""
    return [(mem(f"f{i}", f"other{i}", NOW - timedelta(days=30 + i)), 0.9 - i / 50) for i in range(n)]


T0 = NOW - timedelta(days=10)


def test_a_memory_said_next_to_the_best_hit_takes_the_sixth_place():
    index = index_of((mem("anchor", "s1", T0), 0.95), *fillers(),
                     (mem("next", "s1", T0 + timedelta(seconds=60)), 0.3))
    without = answer(index, slots=0)
    assert "next" not in without
    with_them = answer(index)  # the default: QUERY_NEIGHBOUR_SLOTS=2
    assert with_them[:5] == without[:5], "the first five are left as they were"
    assert with_them[5] == "next"
    assert with_them[6:] == without[5:9], "the items it displaces move down"
    assert len(with_them) == 10


def test_only_the_same_thread_within_the_window_and_a_turn_the_answer_lacks():
    index = index_of(
        (mem("anchor", "s1", T0), 0.95), *fillers(),
        (mem("other-thread", "s2", T0 + timedelta(seconds=30)), 0.35),
        (mem("too-late", "s1", T0 + timedelta(hours=2)), 0.35),
        (mem("same-turn", "s1", T0 + timedelta(seconds=30), turn="anchor"), 0.35),
        (mem("near", "s1", T0 + timedelta(seconds=90)), 0.2),
    )
    got = answer(index)
    assert got[5] == "near"
    assert not {"other-thread", "too-late", "same-turn"} & set(got)


def test_two_slots_at_most_and_none_in_a_short_answer():
    index = index_of((mem("anchor", "s1", T0), 0.95), *fillers(),
                     *[(mem(f"n{i}", "s1", T0 + timedelta(seconds=30 * (i + 1))), 0.3 - i / 100)
                       for i in range(4)])
    got = answer(index)
    assert got[5:7] == ["n0", "n1"] and not {"n2", "n3"} & set(got)
    assert answer(index, top_k=5) == answer(index, top_k=5, slots=0)


def test_a_memory_linked_to_a_best_hit_takes_the_place_after_the_neighbours():
    """The relations layer's `related_to` edges bring in the same thing said another time:
    another thread, months away, too weakly similar to rank (QUERY_RELATED_SLOTS=1)."""
    linked = mem("linked", "s9", T0 - timedelta(days=90))
    same_turn = mem("linked-same-turn", "s1", T0 - timedelta(days=90), turn="anchor")
    anchor = mem("anchor", "s1", T0).model_copy(
        update={"relations": {"linked": 0.8, "linked-same-turn": 0.9}})
    index = index_of((anchor, 0.95), *fillers(), (mem("next", "s1", T0 + timedelta(seconds=60)), 0.3),
                     (linked, 0.2), (same_turn, 0.2))
    without = answer(index, related_slots=0)
    assert "linked" not in without
    got = answer(index)
    assert got[:6] == without[:6], "the first five and the neighbour are left as they were"
    assert got[6] == "linked" and "linked-same-turn" not in got
    assert got[7:] == without[6:9]
    assert answer(index, slots=0)[5] == "linked", "without neighbours it takes the sixth place"


def test_the_items_they_displace_are_never_the_ones_an_answer_must_hold():
    """`keep` (each part's evidence of a combining question): the last item stays, the two
    before it leave for the two neighbours."""
    from streams.read.neighbours import with_neighbours
    from streams.read.query import QueryHit

    index = index_of(*fillers(12))
    hits = [QueryHit(index.served(f"f{i}"), 0.9 - i / 50, 1.0 - i / 10) for i in range(10)]
    found = [(index.served("f10"), 0.5), (index.served("f11"), 0.4)]
    cosines = index.query_similarities(Q)
    got = [h.memory.id for h in with_neighbours(hits, found, cosines, index, 10, keep={"f9"})]
    assert got == ["f0", "f1", "f2", "f3", "f4", "f10", "f11", "f5", "f6", "f9"]
    plain = [h.memory.id for h in with_neighbours(hits, found, cosines, index, 10)]
    assert plain[-1] == "f7"


def test_a_memory_of_the_same_entity_counts_as_linked():
    """Entity keys `profile:pet:luna:age` and `profile:pet:luna:breed`: one entity, two
    attributes; no `related_to` edge between them, months apart, in other threads."""
    anchor = mem("anchor", "s1", T0).model_copy(update={"entity_key": "profile:pet:luna:age"})
    breed = mem("breed", "s9", T0 - timedelta(days=90)).model_copy(
        update={"entity_key": "profile:pet:luna:breed"})
    other = mem("other", "s8", T0 - timedelta(days=90)).model_copy(
        update={"entity_key": "profile:pet:rex:breed"})
    index = index_of((anchor, 0.95), *fillers(), (breed, 0.2), (other, 0.25))
    got = answer(index, slots=0)
    assert got[5] == "breed" and "other" not in got
    assert "breed" not in answer(index, slots=0, related_slots=0)
