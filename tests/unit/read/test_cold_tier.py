"""The cold tier (streams/read/cold_tier.py): when a query searches the archive, and how archived
hits rank and read."""
import numpy as np

from streams.read import cold_tier
from tests.unit.read.test_query_execute import NOW, ask, ids, index_of, mem


def archived(i: str, **fields):  # type: ignore[no-untyped-def]
    return mem(i, state="archived", **fields)


def test_the_archive_is_searched_when_asked_when_the_query_points_back_or_active_ones_are_weak():
    strong, weak = np.array([0.9, 0.8, 0.7]), np.array([0.9, 0.3, 0.2])
    assert cold_tier.reason(None, False, strong, 3, 0.6) is None
    assert cold_tier.reason(None, False, weak, 3, 0.6) == "weak_active"
    assert cold_tier.reason(None, False, strong[:2], 3, 0.6) == "weak_active", "too few active"
    assert cold_tier.reason(None, True, strong, 3, 0.6) == "recall_intent"
    assert cold_tier.reason(True, False, strong, 3, 0.6) == "asked"
    assert cold_tier.reason(False, True, weak, 3, 0.6) is None, "false never searches it"


def test_strong_active_answers_keep_the_archive_out():
    index = index_of(*[(mem(f"a{i}", importance=3), 0.9 - i / 100) for i in range(3)],
                     (archived("old", importance=3), 0.95))
    response, _ = ask(index, top_k=3)
    assert response.cold_tier is None and "old" not in ids((response, None))


def test_weak_active_answers_reach_the_archive_and_archived_hits_say_so():
    index = index_of((mem("weak", importance=3), 0.2), (archived("old", importance=3), 0.9))
    response, hits = ask(index, top_k=2)
    assert response.cold_tier == "weak_active"
    assert ids((response, None))[0] == "old"
    [item] = [i for i in response.items if i["id"] == "old"]
    assert item["archived"] is True and item["text"] == "[Personal] (archived) Ana fact old."


def test_an_archived_hit_ranks_below_an_active_one_that_matches_as_well():
    index = index_of((archived("old", importance=3), 0.8), (mem("new", importance=3), 0.8))
    response, _ = ask(index, top_k=2, include_archived=True)
    assert response.cold_tier == "asked" and ids((response, None)) == ["new", "old"]


def test_what_a_newer_memory_answers_for_never_serves_from_the_archive():
    index = index_of((archived("episode", type="episodic", superseded_by="sum", importance=3), 0.95),
                     (archived("plain", importance=3), 0.5), (mem("sum", importance=3), 0.1))
    response, _ = ask(index, top_k=3, include_archived=True)
    assert "episode" not in ids((response, None)) and "plain" in ids((response, None))


def test_a_query_dated_in_the_past_searches_the_archive():
    index = index_of(*[(mem(f"a{i}", importance=3), 0.9) for i in range(3)],
                     (archived("old", importance=3, created_at=NOW.replace(month=3)), 0.5))
    response, _ = ask(index, top_k=4, query="what did Ana do in March")
    assert response.cold_tier == "recall_intent" and "old" in ids((response, None))

