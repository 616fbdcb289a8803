"""Importance (seed 000 §3 at ingest) and the VADER sentiment it reads."""
from __future__ import annotations

import pytest

from streams.write.importance import ImportanceInputs, level
from streams.write.sentiment import Sentiment, intensity_norm, sentiment


@pytest.mark.parametrize(("salience", "expected"), [(0.0, 1), (1 / 3, 2), (2 / 3, 3), (1.0, 4)])
def test_salience_spreads_neutral_user_facts_over_one_to_four(salience: float, expected: int) -> None:
    assert level(ImportanceInputs(salience=salience, trust=0.7, intensity_norm=0.0)) == expected


def test_intensity_raises_and_trust_lowers() -> None:
    base = ImportanceInputs(salience=2 / 3, trust=0.7, intensity_norm=0.0)
    assert level(base) == 3
    assert level(ImportanceInputs(salience=2 / 3, trust=0.7, intensity_norm=0.7)) == 4
    assert level(ImportanceInputs(salience=1.0, trust=0.7, intensity_norm=0.6)) == 5
    assert level(ImportanceInputs(salience=2 / 3, trust=0.3, intensity_norm=0.0)) == 2


def test_small_talk_gains_nothing_from_its_sentiment() -> None:
    assert level(ImportanceInputs(salience=0.0, trust=0.7, intensity_norm=0.9)) == 1
    assert level(ImportanceInputs(salience=1 / 3, trust=0.7, intensity_norm=0.9)) == 3


def test_pinned_is_five_and_explicit_at_least_four() -> None:
    assert level(ImportanceInputs(salience=0.0, trust=0.7, intensity_norm=0.0, pinned=True)) == 5
    assert level(ImportanceInputs(salience=0.0, trust=0.7, intensity_norm=0.0, explicit=True)) == 4


@pytest.mark.parametrize(("text", "valence"), [
    ("I love painting sunsets so much!", "positive"),
    ("My mom passed away and I am devastated.", "negative"),
    ("The trail is not great.", "negative"),       # negation, which a word list misses
    ("I work as a nurse.", "neutral"),
])
def test_valence(text: str, valence: str) -> None:
    assert sentiment(text).valence == valence


def test_intensity_grows_with_emphasis_and_negative_counts_less() -> None:
    assert sentiment("I love it!!!").intensity > sentiment("I like it.").intensity > 0
    assert intensity_norm(Sentiment("negative", 0.5)) == pytest.approx(0.4)
    assert intensity_norm(Sentiment("positive", 0.5)) == pytest.approx(0.5)
