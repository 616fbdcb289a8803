"""Valence and intensity of a fact (seed 000 §3), from VADER.

VADER (`vaderSentiment`) is a lexicon and rule-based sentiment model made for short social
text: it reads negation ("not happy"), intensifiers ("really", "so"), capitals and "!" — which
is why it scores the turn's own sentence, before the summary is put into a neutral tone. Its
`compound` score in [-1, 1] gives both fields: the sign the valence (VADER's own ±0.05 cut-offs),
the magnitude the intensity (0 neutral … 1 strongest).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

Valence = Literal["positive", "negative", "neutral"]
NEUTRAL_BAND = 0.05
"""|compound| below this is neutral: the threshold VADER's authors recommend."""


@dataclass(frozen=True)
class Sentiment:
    valence: Valence
    intensity: float


@lru_cache(maxsize=1)
def _analyzer() -> SentimentIntensityAnalyzer:
    """One analyzer per process: building it reads the lexicon (~7,500 entries) from disk."""
    return SentimentIntensityAnalyzer()


@lru_cache(maxsize=1)
def affect_words() -> frozenset[str]:
    """The words VADER gives a valence ("glad", "awesome", "hate"), lower case: words of
    feeling, which say how a remark felt rather than what it was about."""
    return frozenset(word for word in _analyzer().lexicon if word.isalpha())


def sentiment(text: str) -> Sentiment:
    """Valence and intensity (0–1, two decimals) of `text`."""
    compound = float(_analyzer().polarity_scores(text)["compound"])
    if compound >= NEUTRAL_BAND:
        valence: Valence = "positive"
    elif compound <= -NEUTRAL_BAND:
        valence = "negative"
    else:
        valence = "neutral"
    return Sentiment(valence, round(abs(compound), 2))


def intensity_norm(s: Sentiment) -> float:
    """Seed 000 §3: `intensity * (0.8 if valence is negative else 1.0)`, in 0–1."""
    return s.intensity * (0.8 if s.valence == "negative" else 1.0)
