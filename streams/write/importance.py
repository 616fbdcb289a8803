"""Importance of a new fact, 1–5 (docs/decisions.md), from the seed 000 §3 formula.

Seed 000 §3 scores a memory as

    0.25·pinned + 0.20·trust + 0.20·min(1, log(1 + access_count)/log 10)
    + 0.20·valence_intensity_norm + 0.15·explicit_user_importance

At ingest nothing has been accessed yet, so that term is 0 and what is left cannot tell "Ana
adopted a dog" from "Ana said the soup was good" — every chat fact would land on the same
value. At ingest the access term's weight, and as much again, therefore goes to what the
fact is about (its
`salience`: small talk 0, a plain statement ⅓, a specific fact — names, a date, a quantity,
identity, family — ⅔, a keyed profile fact or a big life event 1), and the 0–1 score is
cut into the five integer levels. A pinned fact is 5 (pin overrides), an explicit
"remember …" at least 4. The spread on the LoCoMo development turns is printed by
`python -m benchmarks.extraction_profile`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from streams.write.sentiment import affect_words
from streams.language.sentences import STOPWORDS, words
from streams.language.signals import Signals
from streams.language.wordlists import word_list

BIG_EVENT = re.compile(
    r"\b(?:adopt(?:ed|ing)?|married|wedding|engaged|divorced?|graduat(?:ed|ing|ion)|moved|"
    r"born|pregnan(?:t|cy)|passed away|died|funeral|hired|promoted|promotion|new job|fired|"
    r"laid off|retired|diagnos(?:ed|is)|surgery|accident|bought a (?:house|home|car)|"
    r"broke up|allergic|allerg(?:y|ies))\b", re.I,
)
_NAMED = re.compile(r"\b(?:named|called)\s+[A-Z]")
_CLOSE = re.compile(  # the people and animals of the user's life
    r"\b(?:my|our)\s+(?:(?:\w+\s+)?(?:kids?|children|son|daughter|husband|wife|partner|boyfriend|"
    r"girlfriend|mom|dad|mother|father|parents|brother|sister|grand\w+|family|best friend|"
    r"dogs?|cats?|pets?|puppy|kitten))\b|\b(?:have|has|had|got)\s+an?\s+(?:\w+\s+)?(?:dog|cat|"
    r"pet|puppy|kitten|son|daughter|baby)\b", re.I)
_GENERIC = word_list("generic_words") | word_list("stopwords_nltk")
"""Words that frame a remark without naming what it is about, and NLTK's English stopwords
(as bm25s ships them): streams/language/data/generic_words.txt and stopwords_nltk.txt."""
_CONTRACTED = re.compile(r"['’]")
"""A contraction ("it'll", "they're", "don't") is a function word, never a topic."""
LEVELS = (0.22, 0.36, 0.50, 0.64)
"""Where levels 2–5 start on the 0–1 score (below the first is 1)."""
W_PINNED, W_TRUST, W_SALIENCE, W_INTENSITY, W_EXPLICIT = 0.25, 0.20, 0.20, 0.20, 0.15


@dataclass(frozen=True)
class ImportanceInputs:
    salience: float
    trust: float
    intensity_norm: float
    explicit: bool = False
    pinned: bool = False


def topic_words(text: str) -> list[str]:
    """The words of `text` that name what it is about: not stopwords, not the generic frame of
    a remark (`_GENERIC`), not words of feeling (VADER's lexicon: "glad", "awesome", "love").
    "Ana started aerial yoga" has two ("aerial", "yoga"); "Ana is glad it helped" none."""
    affect = affect_words()
    return [w for w in words(text)
            if len(w) > 2 and (lower := w.lower()) not in STOPWORDS and lower not in _GENERIC
            and lower not in affect and not w[:1].isupper() and not _CONTRACTED.search(w)]


def salience(text: str, sig: Signals, keyed: bool, summary: str = "", dated: bool = False) -> float:
    """What the fact is about, 0–1: 1 for a keyed profile fact or a big life event; ⅔ for a
    specific one — naming people, places or titles, a date, a quantity, the speaker's identity
    or the people and animals close to them; ⅓ for a statement about something (it has a
    topic word: `topic_words`); 0 for small talk — a reaction, a pleasantry, a feeling about
    nothing named ("so glad it helped!", "can't wait to see what's next").

    Specific facts are the ones asked about later (on LoCoMo, questions name the people,
    places, dates and counts of the conversation), which is why they, not emphasis, come first.
    Small talk is what the TTL forgets for good (importance 1), so the cut between ⅓ and 0 is
    by topic, never by length: "Ana started aerial yoga" is short and is asked about later.
    """
    if keyed or BIG_EVENT.search(text):
        return 1.0
    named = any(not e.isdigit() for e in sig.entities) or bool(_NAMED.search(text))
    topic = bool(topic_words(text))
    if named or (dated and topic) or sig.number or sig.identity or _CLOSE.search(text):
        return 2 / 3  # a date alone ("feeling good today") names nothing the day was about
    return 1 / 3 if topic else 0.0


def score(inputs: ImportanceInputs) -> float:
    """The seed 000 §3 score at ingest, 0–1 (the access term replaced by salience, see above).
    The salience counts twice the weight of access, so the content spreads the levels and the
    sentiment moves a fact by about one. Small talk (salience 0) gains nothing from its
    sentiment: "that's so awesome!" is a reaction, not a memory with emotional weight."""
    felt = inputs.intensity_norm if inputs.salience > 0 else 0.0
    raw = (W_PINNED * inputs.pinned + W_TRUST * inputs.trust
           + 2 * W_SALIENCE * inputs.salience + W_INTENSITY * felt
           + W_EXPLICIT * inputs.explicit)
    return max(0.0, min(1.0, raw))


def level(inputs: ImportanceInputs) -> int:
    """The integer importance 1–5 (pinned 5, explicit at least 4)."""
    if inputs.pinned:
        return 5
    s = score(inputs)
    value = 1 + sum(s >= bound for bound in LEVELS)
    return max(value, 4) if inputs.explicit else value
