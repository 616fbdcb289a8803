"""A query's time window lifts the memories of those days, whatever their type (fusion module doc)."""
from datetime import date, datetime, timezone

from streams.read.filters import window_mask
from streams.read.query import rank
from streams.language.dates import DateWindow
from tests.unit.read.test_query_execute import NOW, Q, ask, ids, index_of, mem
from tests import defaults

MAY_3 = datetime(2024, 5, 3, 18, tzinfo=timezone.utc)
MARCH = datetime(2024, 3, 10, 9, tzinfo=timezone.utc)


def said(i: str, when: datetime, **fields):
    return mem(i, created_at=when, updated_at=when, last_accessed=when, **fields)


def test_window_mask_reads_the_day_said_or_the_dates_mentioned():
    index = index_of(
        (said("fact-may", MAY_3), 0.5),  # semantic: no date_iso, said (created) on 3 May
        (said("fact-march", MARCH), 0.5),
        (said("episode", MARCH, type="episodic", date_iso="2024-05-02"), 0.5),  # its own day wins
        (said("mentions-may", MARCH, event_start=date(2024, 5, 1), event_end=date(2024, 5, 31)), 0.5),
        (said("midnight", datetime(2024, 5, 6, tzinfo=timezone.utc)), 0.5),  # the day after
    )
    mask = window_mask(index, DateWindow("in early May", date(2024, 5, 1), date(2024, 5, 5)))
    assert [i for i, m in zip(index.ids, mask) if m] == ["fact-may", "episode", "mentions-may"]


def test_rank_lifts_what_was_said_in_the_named_window():
    index = index_of((said("march", MARCH), 0.82), (said("may", MAY_3), 0.78),
                     *[(said(f"x{i}", MARCH), 0.5) for i in range(5)])
    def top(text: str, boost: float) -> str:
        hits = rank(index, Q, top_k=1, candidates=7, weights=defaults.weights(), now=NOW, text=text,
                    retrieval=defaults.retrieval(mode="dense", window_boost=boost))
        return hits[0].memory.id
    assert top("what did Ana cook?", 0.1) == "march"
    assert top("what did Ana cook on 3 May 2024?", 0.1) == "may"
    assert top("what did Ana cook on 3 May 2024?", 0.0) == "march", "0 turns the boost off"


def test_execute_lifts_facts_of_the_window_too():
    index = index_of((said("march", MARCH), 0.82), (said("may", MAY_3), 0.78),
                     *[(said(f"x{i}", MARCH), 0.5) for i in range(5)])
    assert ids(ask(index, top_k=1, query="what about Ana"))[0] == "march"
    assert ids(ask(index, top_k=1, query="what about Ana on 3 May"))[0] == "may"
