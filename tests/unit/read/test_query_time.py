"""Recall intent and time phrases turned into date windows on episodic buckets."""
from datetime import date, datetime, timezone

import pytest

from streams.read.recall_intent import has_recall_intent, time_window

NOW = datetime(2024, 5, 15, 12, tzinfo=timezone.utc)  # a Wednesday


@pytest.mark.parametrize("text, start, end", [
    ("What did we discuss last week?", date(2024, 5, 6), date(2024, 5, 12)),
    ("what did I do in March", date(2024, 3, 1), date(2024, 3, 31)),
    ("what did we decide in early April 2023", date(2023, 4, 1), date(2023, 4, 30)),
    ("the chat yesterday", date(2024, 5, 14), date(2024, 5, 14)),
    ("what happened on May 3", date(2024, 5, 3), date(2024, 5, 3)),
    ("two weeks ago we talked about dogs", date(2024, 4, 29), date(2024, 5, 5)),
    ("where was I in 2023", date(2023, 1, 1), date(2023, 12, 31)),
    ("this week so far", date(2024, 5, 13), date(2024, 5, 15)),
    ("anything since March", date(2024, 3, 1), date(2024, 5, 15)),
    ("during June", date(2023, 6, 1), date(2023, 6, 30)),  # the past June, not a future one
])
def test_time_phrases_become_windows_against_the_reference_time(text, start, end):
    window = time_window(text, NOW)
    assert window is not None and (window.start, window.end) == (start, end)
    assert window.contains(start.isoformat()) and not window.contains(None)


@pytest.mark.parametrize("text", ["What pet does Ana have?", "May I ask my dog's name?",
                                  "Ana likes the Marches of Italy"])
def test_no_time_phrase_no_window(text):
    assert time_window(text, NOW) is None


def test_recall_intent():
    assert has_recall_intent("Remind me what we talked about")
    assert has_recall_intent("what did we discuss")
    assert has_recall_intent("When did Ana adopt Luna?")
    assert has_recall_intent("last week")
    assert not has_recall_intent("What is Ana's dog called?")
