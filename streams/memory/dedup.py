"""Create-or-update decision of docs/architecture.md#write-path (seed 002 bands), as pure functions."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Mapping, Sequence

from streams.language.stemming import stem_words
from streams.language.wordlists import word_list
from streams.language.memo import text_memo
from streams.providers.embedders import EmbedderProfile
from streams.memory.model import Memory


class Action(str, Enum):
    create = "create"
    update = "update"
    supersede = "supersede"  # same fact, changed value: new memory current, old one superseded


@dataclass(frozen=True)
class Bands:
    auto: float
    check_low: float


@dataclass(frozen=True)
class DedupDecision:
    action: Action
    target: Memory | None
    score: float
    reason: str


def bands_for(memory_type: str, profile: EmbedderProfile) -> Bands:
    if memory_type == "episodic":
        return Bands(profile.episodic_auto, profile.episodic_check_low)
    return Bands(profile.semantic_auto, profile.semantic_check_low)


_NUMBER = re.compile(r"\b(\d+(?:[.,]\d+)?)(?:st|nd|rd|th|s)?\b")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBER_WORDS |= {"twice": "2", "thrice": "3"}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.I)
_MONTH = re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|"
                    r"November|December)\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
# Polarity: a fact and its negation or its opposite preference are a changed value, not a repeat.
_NEGATION = re.compile(r"\b(?:not|no longer|never|anymore|any more|doesn't|don't|isn't|stopped|quit)\b",
                       re.I)
_LIKES = re.compile(r"\b(?:love[sd]?|like[sd]?|enjoy(?:s|ed)?|adore[sd]?|prefer(?:s|red)?|"
                    r"(?:(?:is|are) )?(?:a )?(?:huge |big )?fan of|(?:is )?passionate about|"
                    r"would rather)\b", re.I)
_DISLIKES = re.compile(r"\b(?:hate[sd]?|dislike[sd]?|can't stand|detest(?:s|ed)?)\b", re.I)
_TIME_WORDS = word_list("time_words")
_STOP = word_list("stopwords_dedup")


def _values(text: str) -> set[str]:
    """Numbers (ordinals and words included) and month names: the values a fact can change."""
    found = {m.group(1).replace(",", "") for m in _NUMBER.finditer(text)}
    found |= {_NUMBER_WORDS[w.lower()] for w in _NUMBER_WORD.findall(text)}
    found |= {m.lower() for m in _MONTH.findall(text)}
    return found


def _entities(summary: str, entities: Sequence[str]) -> set[str]:
    """Names for the heuristic: declared entities that are not numbers, else capitalised words
    past the first."""
    named = {e.lower() for e in entities if not any(ch.isdigit() for ch in e)}
    if named:
        return named
    words = _WORD.findall(summary)
    return {w.lower() for w in words[1:] if w[0].isupper()}


def _content(text: str) -> set[str]:
    """Content words, leaving out polarity and time words (they are what changes, not what
    the fact is about)."""
    text = _LIKES.sub(" ", _DISLIKES.sub(" ", _NEGATION.sub(" ", text)))
    return {w.lower().removesuffix("'s") for w in _WORD.findall(text)
            if w.lower() not in _STOP | _TIME_WORDS and len(w) > 2}


# Words that carry no fact of their own: a restatement adds or drops them freely.
_FILLER = word_list("dedup_filler")


def _stems(text: str) -> set[str]:
    """Snowball stems of the content words past the subject (the first word), polarity, time
    and filler words left out: what a fact says about its subject, spelt either way
    ("enjoys going on mountain hikes" and "loves hiking in the mountains" -> {mountain, hike})."""
    text = _LIKES.sub(" ", _DISLIKES.sub(" ", _NEGATION.sub(" ", text)))
    words = [w.lower().removesuffix("'s").removesuffix("’s") for w in _WORD.findall(text)[1:]]
    words = [w for w in words if w not in _STOP | _TIME_WORDS | _FILLER and len(w) > 1]
    return set(stem_words(words))


# Closed classes whose members name different things: "Ana's mother" / "Ana's father", "a dog
# named Rex" / "a cat named Rex", "reads" / "writes" mystery novels. Two summaries that each
# name a different member of a class (and not the other's) state different facts.
_SYNONYMS = {"mom": "mother", "mum": "mother", "dad": "father", "grandma": "grandmother",
             "grandpa": "grandfather", "neighbor": "neighbour", "kid": "child", "kids": "child",
             "children": "child"}
_CLASSES = tuple(frozenset(stem_words(c.split())) for c in (
    "mother father sister brother son daughter husband wife boyfriend girlfriend fiance fiancee "
    "grandmother grandfather aunt uncle cousin niece nephew friend neighbour boss colleague",
    "dog cat bird parrot fish horse rabbit hamster turtle snake",
    "reading writing teaching selling buying watching",
))
# Mutually exclusive states: a change from one to another is a changed value.
_STATES = tuple(frozenset(stem_words(c.split())) for c in (
    "single dating engaged married divorced widowed separated",
))


def _class_words(text: str) -> set[str]:
    words = [_SYNONYMS.get(w.lower(), w.lower()) for w in _WORD.findall(text)]
    return set(stem_words([w.removesuffix("'s") for w in words]))


def _members_differ(a: str, b: str, classes: tuple[frozenset[str], ...]) -> bool:
    wa, wb = _class_words(a), _class_words(b)
    return any((ma := wa & c) and (mb := wb & c) and ma.isdisjoint(mb) for c in classes)


def different_member(a_summary: str, b_summary: str) -> bool:
    """Each names a different member of one class (kin, animal, what one does with a work):
    "Ben's sister lives in Berlin." / "Ben's brother lives in Berlin."."""
    return _members_differ(a_summary, b_summary, _CLASSES)


def changed_state(a_summary: str, b_summary: str) -> bool:
    """Each states a different one of exclusive states: "Ana is dating Rui." / "Ana is married
    to Rui."."""
    return _members_differ(a_summary, b_summary, _STATES)


RESTATED_SPAN = 0.1
"""How far below the check band a restatement is looked for (cosine): "Jon hates running." /
"Jon can't stand running." score 0.81 with MiniLM int8, below its check band (0.89)."""
RESTATED_MIN_OVERLAP = 0.5
"""Jaccard overlap of content stems from which a restatement that only adds words (one side's
stems within the other's) is the same fact."""
RESTATED_MIN_SWAP_OVERLAP = 0.6
"""The overlap a restatement that swaps words must exceed: a one-word swap in a short fact
("plays football on Saturdays" / "plays chess on Saturdays", 0.5) is another fact."""


def restated(a_summary: str, a_entities: Sequence[str], b_summary: str,
             b_entities: Sequence[str]) -> bool:
    """The same fact in other words: the same subject and names, no changed value, polarity,
    class member or state, and most content stems shared ("Ben is a huge fan of jazz." /
    "Ben loves jazz music."). Stricter than the check band's heuristic, as it is asked of
    pairs that embed further apart."""
    if _WORD.findall(a_summary)[:1] != _WORD.findall(b_summary)[:1]:
        return False  # another subject
    ea, eb = _entities(a_summary, a_entities), _entities(b_summary, b_entities)
    if (ea - eb) and (eb - ea):
        return False  # each names someone or something the other does not
    if (conflicting_values(a_summary, b_summary) or opposite_polarity(a_summary, b_summary)
            or different_member(a_summary, b_summary) or changed_state(a_summary, b_summary)):
        return False
    sa, sb = _stems(a_summary), _stems(b_summary)
    overlap = len(sa & sb) / max(len(sa | sb), 1)
    if sa <= sb or sb <= sa:  # one adds words to the other ("jazz" / "jazz music")
        return bool(sa & sb) and overlap >= RESTATED_MIN_OVERLAP
    # each has a word the other lacks: "plays football" / "plays chess" is another fact
    return overlap > RESTATED_MIN_SWAP_OVERLAP


def _polarity(text: str) -> tuple[bool, int]:
    return bool(_NEGATION.search(text)), (1 if _LIKES.search(text) else 0) - (1 if _DISLIKES.search(text) else 0)


def conflicting_values(a_summary: str, b_summary: str) -> bool:
    """Each states a value (number, date, month) the other does not: "Luna is 3" / "Luna is 4".

    A value present on one side only ("turned 7 in May" / "had her 7th birthday in May 2023")
    is more detail, not a conflict.
    """
    va, vb = _values(a_summary), _values(b_summary)
    return bool(va - vb) and bool(vb - va)


def opposite_polarity(a_summary: str, b_summary: str) -> bool:
    """One negates what the other states, or likes what the other dislikes."""
    (neg_a, like_a), (neg_b, like_b) = _polarity(a_summary), _polarity(b_summary)
    return neg_a != neg_b or like_a * like_b < 0


def same_subject(a_summary: str, a_entities: Sequence[str], b_summary: str, b_entities: Sequence[str]) -> bool:
    """Entity overlap >= 70 % (seed 002's threshold); without names, most content words shared."""
    ea, eb = _entities(a_summary, a_entities), _entities(b_summary, b_entities)
    if ea or eb:
        return len(ea & eb) / max(len(ea | eb), 1) >= 0.7
    ca, cb = _content(a_summary), _content(b_summary)
    return len(ca & cb) / max(len(ca | cb), 1) >= 0.5


# Single-valued predicates: a subject has one value at a time ("lives in", "works at", "favourite
# band is"), so the same subject and predicate with another value is a changed fact.
_SLOT = re.compile(
    r"^(?P<subject>.+?)\s+(?P<predicate>lives in|lives at|moved to|works at|works for|works as|"
    r"is employed (?:at|by)|studies|is studying|majors in|drives|is called|is named|"
    r"is married to|is dating|is engaged to|(?:is )?(?:planned|scheduled|set|booked) for|"
    r"favou?rite [a-z]+(?: [a-z]+)? is|is (?:now )?(?:\d+|a|an)(?= )|is(?= (?:vegan|vegetarian|"
    r"pescatarian|single|married|divorced|engaged|retired)\b))\s+(?P<value>[^,;]+?)\s*\.?$"
)
SLOT_LOW = 0.6
"""A changed single-valued slot is looked for among neighbours down to this cosine."""
_SLOT_NOISE = frozenset("a an the now currently still again".split())
_SAME_PREDICATE = {"moved to": "lives in"}  # "moved to Lisbon" changes where one lives


@text_memo  # each neighbour's summary is read again for every candidate it is a neighbour of
def _slot(clause: str) -> tuple[str, str, frozenset[str]] | None:
    """(subject, predicate, value words) of a single-valued statement, or None."""
    m = _SLOT.match(clause.strip())
    if not m:
        return None
    value = frozenset(w.lower() for w in _WORD.findall(m.group("value")) + _NUMBER.findall(
        m.group("value")) if w.lower() not in _SLOT_NOISE)
    subject = " ".join(w.lower() for w in _WORD.findall(m.group("subject")))
    predicate = _SAME_PREDICATE.get(m.group("predicate").lower(), m.group("predicate").lower())
    return (subject, predicate, value) if value and subject else None


def changed_slot(summary: str, old_summary: str) -> bool:
    """Same subject and single-valued predicate, and a value neither side contains:
    "Ana lives in Berlin." / "Ana lives in Lisbon." — not "… lives in Lisbon with Rui."."""
    new, old = _slot(summary), _slot(old_summary)
    if new is None or old is None or new[:2] != old[:2]:
        return False
    return not (new[2] <= old[2] or old[2] <= new[2])


_CLAUSE_SPLIT = re.compile(r"\s*[,;]\s*(?:and\s+|but\s+)?|\s+(?:but|and now|so now)\s+")


def contradicts(summary: str, entities: Sequence[str], old_summary: str,
                old_entities: Sequence[str]) -> bool:
    """`summary`, or one clause of it, changes a value of `old_summary` about the same subject:
    "Ana is not a vegetarian anymore, Ana eats fish now." contradicts "Ana is a vegetarian."."""
    return any(
        changed_slot(clause, old_summary)
        or ((conflicting_values(clause, old_summary) or opposite_polarity(clause, old_summary)
             or changed_state(clause, old_summary))
            and not different_member(clause, old_summary)
            and same_subject(clause, entities if clause == summary else (), old_summary,
                             old_entities))
        for clause in clauses(summary)
    )


def clauses(summary: str) -> list[str]:
    """The summary, then its clauses ("A, and B" → "A", "B") when it has several."""
    return [summary, *(c for c in _CLAUSE_SPLIT.split(summary) if c and c != summary)]


def same_fact_heuristic(
    a_summary: str, a_entities: Sequence[str], b_summary: str, b_entities: Sequence[str]
) -> bool:
    """Seed 002: entity overlap >= 70 % and no conflicting number or date (and, here, no
    flipped polarity; without entities, most content words must be shared)."""
    return ((same_subject(a_summary, a_entities, b_summary, b_entities)
             or restated(a_summary, a_entities, b_summary, b_entities))
            and not conflicting_values(a_summary, b_summary)
            and not opposite_polarity(a_summary, b_summary)
            and not different_member(a_summary, b_summary))


def decide(
    *,
    memory_type: str,
    summary: str,
    entities: Sequence[str],
    event_time: datetime,
    neighbours: Sequence[tuple[Memory, float]],
    profile: EmbedderProfile,
    merge_window: timedelta,
    use_heuristics: bool = True,
    same_fact: Mapping[str, bool] | None = None,
) -> DedupDecision:
    """Decide whether a candidate updates its best neighbour or becomes a new memory.

    `neighbours` are active memories of the same user and type, best first. `same_fact` holds
    the LLM's same-fact answers by memory id for check-band neighbours, when one was asked;
    otherwise the entity/number heuristics decide.
    """
    bands = bands_for(memory_type, profile)
    # A changed value scores lower than a paraphrase ("Luna is 3 years old" / "Luna turned 4":
    # 0.90 with MiniLM), so conflicts are looked for below the check band.
    conflict_low = bands.check_low - 0.1
    if memory_type == "semantic" and use_heuristics:
        # The same subject and single-valued predicate with another value ("lives in Lisbon" /
        # "lives in Berlin", cosine 0.77) is a change however far the values embed apart.
        candidate_clauses = clauses(summary)
        for memory, score in neighbours:
            if score < SLOT_LOW:
                break
            if any(changed_slot(clause, memory.summary) for clause in candidate_clauses):
                return DedupDecision(Action.supersede, memory, score, "changed_slot")
    for memory, score in neighbours:
        if memory_type == "episodic" and abs(event_time - memory.created_at) > merge_window:
            continue  # episodic merges only within the window
        if (score >= conflict_low and memory_type == "semantic"
                and contradicts(summary, entities, memory.summary, memory.entities)):
            return DedupDecision(Action.supersede, memory, score, "changed_value")
        if score >= bands.auto:
            if memory_type == "semantic" and (conflicting_values(summary, memory.summary)
                                              or opposite_polarity(summary, memory.summary)):
                return DedupDecision(Action.create, None, score, "auto_band_different_value")
            if memory_type == "semantic" and different_member(summary, memory.summary):
                return DedupDecision(Action.create, None, score, "auto_band_different_member")
            return DedupDecision(Action.update, memory, score, "auto_update_band")
        if score >= bands.check_low:
            if same_fact is not None and memory.id in same_fact:
                same = same_fact[memory.id]
            else:
                same = use_heuristics and same_fact_heuristic(summary, entities, memory.summary,
                                                              memory.entities)
            if same:
                return DedupDecision(Action.update, memory, score, "check_band_same_fact")
            return DedupDecision(Action.create, None, score, "check_band_different_fact")
        if memory_type == "semantic" and score >= bands.check_low - RESTATED_SPAN:
            # a restatement below the check band: an LLM's answer when it was asked about this
            # neighbour, else the stricter restated-fact rule
            if same_fact is not None and memory.id in same_fact:
                if same_fact[memory.id]:
                    return DedupDecision(Action.update, memory, score, "restated_same_fact")
            elif use_heuristics and restated(memory.summary, memory.entities, summary, entities):
                return DedupDecision(Action.update, memory, score, "restated_same_fact")
        if score < conflict_low:
            break  # neighbours are sorted: nothing further can reach the bands
    best = neighbours[0][1] if neighbours else 0.0
    return DedupDecision(Action.create, None, best, "below_bands")
