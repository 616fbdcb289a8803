"""Which sentences of a turn hold a fact: each cleaned sentence scored by its signals
(`streams/language/signals.py`), the best of a turn chosen (`fact_sentences`), and the note kept
when none qualifies (`note_sentence`). The trigger uses them too, so that both agree.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from streams.language.sentences import (
    STOPWORDS,
    clean_sentence,
    is_filler,
    is_greeting,
    is_question,
    words,
)
from streams.language.splitting import split_sentences
from streams.language.signals import Signals, sentence_signals
from streams.language.memo import texts_memo
from streams.language.wordlists import word_list
from topics.turns import Role

MIN_SCORE = 1.5
"""Sentences scoring this much (`fact_score`) become facts: a first-person statement with a few
content words and no other signal just makes it (at importance 1, see the extractor); 2.0 lost
about 1 point of LoCoMo recall@10."""
_SINGULAR = re.compile(r"(?<![\w'’])[Ii](?![\w])|\b[Mm](?:e|y|ine|yself)\b")
_NOT_A_FACT = re.compile(  # proposals, encouragement, reactions
    r"^(?:let['’]?s|let us|let me|sounds|looks|seems|keep|stay|chase|don['’]?t|do not|make sure|"
    r"go for|hang in|have faith|believe in|never give up|good luck|enjoy|tell|give it|congrats|"
    r"congratulations|well done|good job|great job|wishing|hope you|hope your|thanks|thank you|"
    r"love (?:that|this|it|the|your|those|these)|can['’]?t wait to (?:see|hear)|fingers crossed|"
    r"(?:i['’]?d |would )?love to (?:hear|see|know|check(?: out)?) (?:more|it|that|this|them|"
    r"those|your|how|what|about|pics?|photos?|pictures?)\b|(?:i['’]?d |would )?love to (?:hear|"
    r"see|know)\W*$|"
    r"you got this|we got this|here['’]?s to|thanks for|thank you for|take a look|have a look|"
    r"check (?:it|this|that|them) out|look at (?:this|that|these|them|it)\b|"
    r"i['’]?m (?:so |really |very )?(?:sorry|glad|happy|proud|stoked|thrilled) (?:to hear|for you|"
    r"of you|that you|you))\b", re.I
)
_HABIT = re.compile(r"\b(?:every (?:day|week|morning|night|weekend|month|year)|daily|weekly|"
                    r"usually|always|often|regularly|each (?:day|week))\b", re.I)
_ANAPHORIC = re.compile(r"^(?:it|its|that|this|they|them|their|those|these|he|she|there|his|her)\b",
                        re.I)
def is_expletive_it(sentence: str) -> bool:
    """"It feels like …", "It's important to …", "It's been a while since …": a dummy subject,
    not a pronoun that needs an antecedent."""
    return bool(_EXPLETIVE_IT.match(sentence))


_EXPLETIVE_IT = re.compile(
    r"^it(?:['’]s| is| was| has been|['’]s been| feels| felt| seems| seemed| looks| looked|"
    r" would be| will be)\s+(?:(?:so|really|very|super|pretty|such|always|been|a|an|"
    r"\w+(?:ly)?)\s+){0,3}?(?:to|that|how|when|like|being|since|as if|knowing|seeing|having|"
    r"getting|watching)\b", re.I,
)


_COUNT_WORDS = word_list("count_words")


def content_words(sentence: str) -> int:
    """Number of words that carry content (no stopwords, pronouns, fillers); a number counts
    ("I have two kids", "I run 5 km every morning" state a quantity)."""
    return sum(1 for w in words(sentence)
               if w.isdigit() or w.lower() in _COUNT_WORDS
               or (len(w) > 2 and w.lower() not in STOPWORDS))


def fact_score(sentence: str, sig: Signals) -> float:
    """Content score of a cleaned sentence; `MIN_SCORE` and up is worth a fact."""
    s = 1.5 if _SINGULAR.search(sentence) else 1.0 * sig.first_person
    s += 2 * sig.preference + 1.5 * sig.plan + 2 * sig.life_event + 2 * sig.identity
    s += 0.5 * (min(len(sig.entities), 3) + sig.number + sig.time_anchor)
    s += 1.0 * bool(_HABIT.search(sentence))
    s += 0.5 if sig.n_words >= 6 else (-1.0 if sig.n_words < 4 else 0.0)
    if is_anaphoric(sentence):  # "It was great" / "They're my rock": not self-contained
        s -= 1.0 if sig.first_person else 2.0
    return s


def own_sentence(sentence: str, sig: Signals) -> bool:
    """About the speaker: first person and no second person."""
    return sig.first_person and not sig.second_person


def other_score(sentence: str, sig: Signals) -> float:
    """Content score of a sentence without first person ("She is 3.", "The hike was steep.").

    Lower than `fact_score` for the same content: such a sentence is mostly context for a
    neighbouring first-person sentence; it stands alone only with strong signals (named
    entities, numbers, dates, a preference or an event).
    """
    s = 1.0 * sig.preference + 1.0 * sig.plan + 1.0 * sig.life_event
    s += 0.5 * (min(len(sig.entities), 3) + sig.number + sig.time_anchor)
    s += 0.5 if sig.n_words >= 6 else (-1.0 if sig.n_words < 4 else 0.0)
    if is_anaphoric(sentence):
        s -= 2.0
    return s


def is_anaphoric(sentence: str) -> bool:
    """Opens on a pronoun or demonstrative ("It was great", "They're called …"); a dummy "it"
    ("It's important to …") does not count."""
    return bool(_ANAPHORIC.match(sentence)) and not is_expletive_it(sentence)


def skippable(sentence: str, names: tuple[str, ...] = ()) -> bool:
    """Greeting, filler, question, proposal, encouragement or reaction: never a fact."""
    return (not sentence or is_greeting(sentence, names) or is_filler(sentence)
            or is_question(sentence) or bool(_NOT_A_FACT.match(sentence)))


OTHER_MIN = 1.0
"""A sentence without first person scoring this much (`other_score`) is a fact of its own
("Fox Hollow is a great trail to hike on weekends." → "Andrew said Fox Hollow is …")."""


@dataclass(frozen=True)
class Part:
    """One content sentence of a turn: cleaned text, position, score, signals, and whether it is
    about the speaker (first person) or a statement without first person."""

    index: int
    text: str
    score: float
    sig: Signals
    own: bool

    @property
    def head_score(self) -> float:
        """Score on the `fact_score` scale: a statement without first person at `OTHER_MIN`
        counts as `MIN_SCORE` and climbs half as fast, so first-person facts come first."""
        return self.score if self.own else MIN_SCORE + (self.score - OTHER_MIN) * 0.5


def content_parts(sentences: list[str], role: Role, names: tuple[str, ...] = ()) -> list[Part | None]:
    """Per cleaned sentence: its `Part`, or None when it is not content.

    User turns: first-person sentences about the speaker score by `fact_score`; sentences with
    neither first nor second person score by `other_score`; sentences about the listener
    (second person) are dropped. Assistant turns: decisions only.

    Memoised (`streams.language.memo.texts_memo`): the trigger and then the extractor ask it
    of the same turn's sentences, a tenth of the write rules' time each.
    """
    return list(_content_parts(tuple(sentences), role, names))


@texts_memo
def _content_parts(sentences: tuple[str, ...], role: Role,
                   names: tuple[str, ...] = ()) -> tuple[Part | None, ...]:
    out: list[Part | None] = []
    for i, s in enumerate(sentences):
        if skippable(s, names) or content_words(s) < 2:
            out.append(None)
            continue
        sig = sentence_signals(s)
        if role == Role.assistant:
            out.append(Part(i, s, MIN_SCORE, sig, True) if sig.decision else None)
        elif own_sentence(s, sig):
            out.append(Part(i, s, fact_score(s, sig), sig, True))
        elif not sig.first_person and not sig.second_person:
            out.append(Part(i, s, other_score(s, sig), sig, False))
        else:
            out.append(None)
    return tuple(out)


def fact_sentences(sentences: list[str], role: Role, names: tuple[str, ...] = (),
                   max_facts: int = 3) -> list[Part]:
    """The best `max_facts` sentences of a turn to write facts from, in turn order.

    A sentence qualifies at `head_score` ≥ `MIN_SCORE` and when it does not open on a pronoun
    ("It was Matt Patterson." answers a question we cannot see; "They're my rock." needs the
    sentence before). Each fact is written from one sentence: on LoCoMo, joining a neighbouring
    sentence (for context, or when the best sentence is short) lowered recall — the longer
    summary embeds less sharply.
    """
    parts = [p for p in content_parts(sentences, role, names) if p is not None
             and p.head_score >= MIN_SCORE and not is_anaphoric(p.text)]
    best = sorted(parts, key=lambda p: (-p.head_score, p.index))[:max_facts]
    return sorted(best, key=lambda p: p.index)


NOTE_MIN_WORDS = 3
"""Content words a sentence needs to be kept as a note (`note_sentence`)."""


def note_sentence(text: str, names: tuple[str, ...] = (), image: bool = False) -> str | None:
    """The sentence of a user turn to keep as a note when the rules make no fact of it: the
    cleaned sentence with the most content words (at least `NOTE_MIN_WORDS`; the first on a
    tie) that is not a greeting, filler, question or reaction; None when there is none.

    Why: the fact rules want a first-person statement about the speaker, or one about neither
    party that does not open on a pronoun. Chat is elliptic ("Still working on opening a dance
    studio.", "Been reading that book you recommended"), answers what the turn before asked
    ("It's Seattle, I'm stoked for my game there next month!", "Their names are Pepper,
    Precious and Panda.") and says things about the listener; such turns left no memory, and
    on LoCoMo 38 questions the raw turns answered had no fact from any of their evidence turns.
    Kept as what the speaker said ("Jon said …"), they are found again: recall_any@10 +0.5 to
    +1.5 points (docs/benchmarks.md#recall), about one note per ten turns.
    """
    best, most = None, NOTE_MIN_WORDS - 1
    for raw in split_sentences(text):
        sentence = clean_sentence(raw, image=image)
        if not sentence or skippable(sentence, names):
            continue
        count = content_words(sentence)
        if count > most:
            best, most = sentence, count
    return best
