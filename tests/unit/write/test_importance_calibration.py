"""Importance 1 means small talk (issue 20 item 5): on the labelled set, what the TTL would
purge is trivia, and the facts a user may ask about stay out of its reach."""
from streams.settings import Settings
from benchmarks.importance_report import importance_report, load_labels


def test_the_ttl_reaches_trivia_and_spares_facts_on_the_labelled_set():
    report = importance_report(load_labels(), Settings())  # type: ignore[call-arg]
    assert report["ttl_importance_max"] == 1
    assert report["ttl_precision"] >= 0.9, report
    assert report["facts_kept"] >= 0.95, report
    assert report["trivia_reached"] >= 0.8 * report["turns_storing_anything"]["trivia"], report
