"""The cheap content signals of one sentence (first person, preference, plan, life event,
identity, time anchor, number, decision, names) and the memory type they point to.

Every rule reads a text in linear time (see `streams/language/sentences.py`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from streams.language.memo import text_memo
from streams.language.sentences import words
from streams.language.wordlists import word_list

_FIRST_PERSON = re.compile(
    r"(?<![\w'’])[Ii](?![\w])|\b(?:[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e|[Oo]urs?|us)\b"
)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd|u|ur)\b", re.I)
_PREFERENCE = re.compile(
    r"\b(?:love|loved|like|liked|enjoy|enjoyed|hate|hated|prefer|preferred|adore|dislike|"
    r"favou?rite|fan of|into|passionate|obsessed|can't stand|keen on)\b", re.I
)
_PLAN = re.compile(
    r"\b(?:going to|gonna|planning|plan to|plans to|intend|will|'ll|hoping to|hope to|want to|"
    r"wanna|aim to|goal|looking forward|thinking of|thinking about|about to|next (?:week|month|"
    r"year|summer)|decided to|signing up|saving (?:up )?for)\b", re.I
)
_LIFE_EVENT = re.compile(
    r"\b(?:adopted|married|engaged|divorced|graduated|moved|started|began|joined|quit|retired|"
    r"born|passed away|died|hired|promoted|fired|bought|sold|won|lost|finished|completed|"
    r"launched|opened|visited|travell?ed|attended|went|got|became|raised|published|signed up|"
    r"ran|climbed|hiked|painted|wrote|built|made|took|received|celebrated|met|had)\b", re.I
)
_IDENTITY = re.compile(
    r"\b(?:my name is|call me|I'?m from|I am from|I live|I'm living|I work|I'm a|I am a|"
    r"I'm an|I am an|my (?:job|work|career|profession|username|handle|pronouns))\b"
    r"|(?-i:^(?!(?:It|This|That|There|He|She|They|What|Which|Who)\b)[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
    r" (?:is|was) (?:my|our) (?=[a-z])", re.I
)
_TIME_ANCHOR = re.compile(
    r"\b(?:yesterday|today|tonight|last (?:night|week|weekend|month|year|summer|winter|spring|"
    r"fall|autumn|(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*)|this (?:morning|afternoon|evening|week|"
    r"weekend|month|year)|ago|the other day|recently|earlier|(?:in|since) (?:19|20)\d\d|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|over the weekend)\b", re.I
)
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|hundred)\b", re.I)
_ENTITY = re.compile(r"(?<=[\w,;:] )(?:[A-Z][\w'’&-]*)(?: (?:of |the |de )?[A-Z][\w'’&-]+)*")
_LEADING_NAME = re.compile(  # "J.K. Rowling is …", "Harry Potter and …", "Fox Hollow is …"
    r"^[\"'“]?((?:[A-Z][\w'’&.-]*)(?: (?:of |the |de )?[A-Z][\w'’&.-]+)+)"
)
_NOT_ENTITIES = word_list("not_names")
_STEPS = re.compile(  # "first … then" from the first "first" of each line only: a later one
    # on the same line finds no "then" the first one did not
    r"(?:\bstep \d|^(?>[^\n]*?\bfirst(?:ly)?,? )[^\n]+?\bthen\b|^[^\S\n]*\d+[.)]\s|"
    r"\bto \w+ .{0,40}\byou (?:need|have|should)\b)", re.I | re.M
)
_PAST_VERB = re.compile(
    r"\b(?:went|visited|attended|saw|met|took|ran|finished|started|adopted|bought|got|had|did|"
    r"joined|travell?ed|celebrated|watched|played|won|lost|hiked|painted|made|tried|gave|"
    r"received|graduated|moved|began|came|left|spent|wrote|read|ate|flew|drove|climbed|"
    r"signed|volunteered|organi[sz]ed|hosted|\w+ed)\b", re.I
)
_DECISION = re.compile(
    r"\b(?:we(?:'ve| have)? decided|(?:I|we)(?:'ll| will) (?:go with|use|book|schedule|set up|"
    r"remind)|let's go with|the plan is|(?:I've|I have) (?:booked|scheduled|set|created|added|"
    r"saved)|decided to|agreed to|we agreed|going with)\b", re.I
)

@dataclass(frozen=True)
class Signals:
    """Cheap content signals of one sentence."""

    first_person: bool
    second_person: bool
    preference: bool
    plan: bool
    life_event: bool
    identity: bool
    time_anchor: bool
    number: bool
    decision: bool
    entities: tuple[str, ...]
    n_words: int


@text_memo
def sentence_signals(sentence: str) -> Signals:
    """Compute the content signals of one sentence."""
    return Signals(
        first_person=bool(_FIRST_PERSON.search(sentence)),
        second_person=bool(_SECOND_PERSON.search(sentence)),
        preference=bool(_PREFERENCE.search(sentence)),
        plan=bool(_PLAN.search(sentence)),
        life_event=bool(_LIFE_EVENT.search(sentence)),
        identity=bool(_IDENTITY.search(sentence)),
        time_anchor=bool(_TIME_ANCHOR.search(sentence)),
        number=bool(_NUMBER.search(sentence)),
        decision=bool(_DECISION.search(sentence)),
        entities=_entities_of(sentence),
        n_words=len(words(sentence)),
    )


def _entities_of(sentence: str) -> tuple[str, ...]:
    """Capitalised names inside the sentence, and a multi-word name opening it."""
    found = [e for e in _ENTITY.findall(sentence) if e not in _NOT_ENTITIES]
    if m := _LEADING_NAME.match(sentence):
        first = m.group(1).split()[0].rstrip(".,")
        if first not in _NOT_ENTITIES and first.lower() not in _NOT_NAME_OPENERS:
            found.insert(0, m.group(1).rstrip("."))
    names = list(dict.fromkeys(found))[:MAX_ENTITIES]
    return tuple(e for e in names if not any(_inside(e, o) for o in names))


MAX_ENTITIES = 32
"""The most distinct names read from one sentence: each is checked against every other, a
square of work, and a sentence worth a fact names far fewer."""


def _inside(name: str, other: str) -> bool:
    """Whether `name` is a word or words of another name ("Harry Potter" makes "Potter"
    redundant)."""
    return (name != other and name in other
            and re.search(r"\b" + re.escape(name) + r"\b", other) is not None)


_NOT_NAME_OPENERS = word_list("not_name_openers")


def memory_type(sentence: str, signals: Signals | None = None) -> str:
    """semantic | episodic (past event with a time anchor) | procedural (step-by-step)."""
    sig = signals or sentence_signals(sentence)
    if _STEPS.search(sentence):
        return "procedural"
    if sig.time_anchor and _PAST_VERB.search(sentence) and not sig.plan:
        return "episodic"
    return "semantic"


def is_past_tense(sentence: str) -> bool:
    """A past-tense verb and no plan ("we hiked on Saturday", not "we'll hike on Saturday")."""
    return bool(_PAST_VERB.search(sentence)) and not _PLAN.search(sentence)


SIGNAL_TAGS = ("preference", "plan", "life_event", "identity")
"""The tags `signal_tags` gives: what kind of statement a fact is, not what it is about."""


def signal_tags(sig: Signals) -> list[str]:
    """Names of the signals that fired, as tags (`SIGNAL_TAGS`)."""
    return [t for t, on in zip(SIGNAL_TAGS, (sig.preference, sig.plan, sig.life_event, sig.identity))
            if on]
