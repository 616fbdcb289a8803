"""Recall intent of a query (its time phrases: tests/unit/language/test_dates.py)."""
from streams.read.recall_intent import has_recall_intent


def test_recall_intent():
    assert has_recall_intent("Remind me what we talked about")
    assert has_recall_intent("what did we discuss")
    assert has_recall_intent("When did Ana adopt Luna?")
    assert has_recall_intent("last week")
    assert not has_recall_intent("What is Ana's dog called?")
