"""Rules extractor (docs/architecture.md#write-path Extraction): up to `max_facts` third-person facts from one turn.

No model: sentences are split and cleaned, greetings/filler/questions/reactions dropped, the rest
scored by cheap signals (first person, preferences, plans, life events, names, numbers, dates)
and the best ones (`text_rules.fact_sentences`) each written as one fact: relative dates resolved
against the turn's time with `dateparser` ("last Saturday" → "on 6 May 2023"), first person
rewritten in the third person naming the speaker, a statement without first person attributed
("Ana said the trail is steep."), intensifiers and exclamations dropped (neutral tone). A shared
photo (LoCoMo caption) becomes "Ana shared a photo of …". Each summary is checked with
`writing.validate_summary` after `writing.normalise_summary` (seed 001 §9) and dropped when it
still fails; each fact is classified (type, category, importance, tags, entities, entity key).

No spaCy: the official English models are not published on PyPI (only third-party re-uploads
of their weights are), and even a re-upload of en_core_web_sm 3.8, measured on the LoCoMo
development turns on the project machine, cost 3.4 ms a turn for sentence splitting alone
(tok2vec + senter), 8.5 ms with named entities and 9.8 ms for the full pipeline — against about
1.2 ms for this whole extractor (`python -m benchmarks.extraction_profile`).

Sentences that open on a pronoun ("It was Matt Patterson.", "They're my rock.") are not written:
they answer a question or lean on a sentence the fact would not carry. Each fact is one sentence:
on the LoCoMo development set, joining a neighbouring sentence (for context, or when the best
sentence is short) lowered recall, the longer summary embedding less sharply.
"""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from streams.write.categories import categorise
from streams.write.importance import ImportanceInputs, salience
from streams.write.importance import level as importance_level
from streams.write.mentioned_dates import mentioned_span
from streams.write.policy import find_secrets
from streams.write.sentiment import Sentiment, intensity_norm, sentiment
from streams.write.text_rules import (
    STOPWORDS,
    Part,
    Signals,
    clean_sentence,
    fact_sentences,
    is_past_tense,
    memory_type,
    note_sentence,
    sentence_signals,
    signal_tags,
    split_sentences,
    strip_caption,
    words,
)
from streams.write.trigger import CommandKind, parse_command
from streams.write.writing import normalise_summary, validate_summary
from topics.candidates import Fact
from topics.turns import Role, Turn

_NAME, _GROUP, _CO_NAME = "\x01", "\x02", "\x03"  # _CO_NAME: "my husband and I" (no agreement)
_APOS = "['’]"
_EMOJI = re.compile("[\U0001F000-\U0001FFFF\u2600-\u27BF\uFE0F]+")
_FAMILY = re.compile(
    r"\b(?:kids?|family|husband|wife|partner|children|son|daughter|mom|dad|parents|fam|"
    r"spouse|boyfriend|girlfriend|hubby|pets?|dogs?|cats?|pup|puppy|kitty|kitten)\b", re.I,
)
_ADVERBS = (
    r"also|just|really|never|always|still|even|usually|often|sometimes|recently|finally|only|"
    r"already|actually|definitely|totally|kinda|sorta|truly|honestly|absolutely|mostly|rarely|"
    r"generally|personally|literally|seriously|simply|especially|certainly|probably|basically|"
    r"now|too|so|then|once|ever|all"
)
_NO_CONJ = frozenset((
    "can could should would will shall might must may cannot can't couldn't wouldn't "
    "shouldn't won't didn't did was were had am ain't went saw got made took ran came felt "
    "found said told thought knew bought brought began became gave kept left lost met paid "
    "put read sent set sat spent stood won wrote ate drove flew grew hit hurt let lit meant "
    "quit rode rose sang shot shut slept sold spoke swam taught threw understood woke wore "
    "caught chose dug drew drank fell fought forgot forgave froze hung heard held hid laid led "
    "lent shook sought stole stuck struck swore tore wept cut cost built dreamt learnt fed "
    "bent bit blew broke dealt fled lay rang sank slid spun stung beat bet cast shed split "
    "spread upset wound and or but to a the of in on at for with as if when because gotta "
    "gonna wanna used are"
).split())
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is"}
_I = r"(?<![\w'’])[Ii]"
_REWRITES = tuple((re.compile(_I + p), _NAME + r) for p, r in (
    (_APOS + r"m\b|(?<![\w'’])[Ii] am\b", " is"), (r" was\b", " was"),
    (r" haven" + _APOS + r"t\b", " hasn't"), (_APOS + r"ve\b|(?<![\w'’])[Ii] have\b", " has"),
    (_APOS + r"ll\b", " will"), (_APOS + r"d (been|gone|had|seen|done|never|already|ever)\b", r" had \1"),
    (_APOS + r"d\b", " would"), (r" don" + _APOS + r"t\b", " doesn't"),
    (r" do not\b", " does not"), (r" do\b", " does"),
))
_COMPOUND_I = re.compile(
    r"((?:^|[,;:–—-]\s*|\b(?:when|because|since|but|where)\s+)(?:[Mm]y\s+|[Oo]ur\s+|[Tt]he\s+)?"
    r"[\w'’]+(?:\s+[\w'’]+)?\s+(?:and|&)\s+)[Ii]\b(?!['’])"
)
_I_VERB = re.compile(_I + r"((?:\s+(?:" + _ADVERBS + r"|[a-z]+ly))*)\s+([a-z]+)\b(?!['’])")
_PRONOUNS = tuple((re.compile(p), r) for p, r in (
    (_I + r"\b", _NAME), (r"\b[Mm]yself\b", "themself"), (r"\b[Mm]y\b|\b[Mm]ine\b", _NAME + "'s"),
    (r"\b[Mm]e\b", _NAME), (r"\b[Ww]e (?=(?:should|must)\b)", "people "),
    (r"\b[Ww]e" + _APOS + r"re\b|\b[Ww]e are\b", _GROUP + " are"),
    (r"\b[Ww]e" + _APOS + r"ve\b", _GROUP + " have"), (r"\b[Ww]e" + _APOS + r"ll\b", _GROUP + " will"),
    (r"\b[Ww]e" + _APOS + r"d\b", _GROUP + " would"), (r"\b[Ww]e\b|\bus\b", _GROUP),
    (r"\b[Oo]urselves\b", "themselves"), (r"\b[Oo]urs?\b", _NAME + "'s"),
))
_YOU = tuple((re.compile(p, re.I), r) for p, r in (
    (r"\byou" + _APOS + r"re\b|\byou are\b", "the user is"), (r"\byou" + _APOS + r"ve\b", "the user has"),
    (r"\byou" + _APOS + r"ll\b", "the user will"), (r"\byou" + _APOS + r"d\b", "the user would"),
    (r"\byour\b", "the user's"), (r"\byou\b", "the user"),
))
_PET = r"((?i:dog|cat|puppy|pup|kitten|bird|parrot|rabbit|bunny|hamster|horse|turtle|fish))"
_KEYS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:[Mm]y|[Oo]ur)\s+" + _PET + r",?\s+([A-Z][a-z]+),?\s+(?:is|" + _APOS +
                r"s|turned|turns|just turned)\s+(?:now\s+)?(\d{1,2})\b"), "profile:pet:{1}:age"),
    # the age within 200 characters of the naming: unbounded, each naming rescanned the rest of
    # the sentence ("a dog named Max" many times over cost the square of the sentence)
    (re.compile(r"\b" + _PET + r"\s+(?:named|called)\s+([A-Z][a-z]+)\b.{0,200}?\b(?:[Ss]he|[Hh]e|"
                r"[Ii]t|who|\2)(?:\s+is|" + _APOS + r"s|\s+turned|\s+turns)\s+(?:now\s+)?(\d{1,2})\b"),
     "profile:pet:{1}:age"),
    (re.compile(r"\b(?:[Mm]y|[Oo]ur)\s+(son|daughter|brother|sister|husband|wife|partner|boyfriend|"
                r"girlfriend|mom|dad|mother|father),?\s+([A-Z][a-z]+),?\s+(?:is|" + _APOS +
                r"s|turned|turns|just turned)\s+(?:now\s+)?(\d{1,3})\b"), "profile:{0}:{1}:age"),
    # "Luna turned 4": a named someone's age, kind unknown; `*` matches the kind of an existing
    # key (`profile:pet:luna:age`), see `streams.memory.documents.keys_match`.
    (re.compile(r"^([A-Z][a-z]+)\s+(?:just\s+)?(?:turned|turns)\s+(\d{1,2})\b"), "profile:*:{0}:age"),
    (re.compile(r"\b[Mm]y name is ([A-Z][a-z]+)|\b[Cc]all me ([A-Z][a-z]+)"), "profile:name"),
    # sensitive profile fields (seed 001 §10): their changes wait for consent (streams.memory.consent)
    (re.compile(r"\b[Mm]y pronouns are\b|" + _I + r" go by (?:she|he|they)/"), "profile:pronouns"),
    (re.compile(r"\b[Mm]y (?:first |native |preferred |mother )?(?:language|tongue) is [A-Z]|" + _I +
                r" (?:would )?prefer (?:to )?(?:speak|speaking|talk|talking) (?:in )?[A-Z]"),
     "profile:language"),
    (re.compile(r"(?:" + _I + r"|\b[Ww]e)(?:\s+(?:finally|just|recently|now|still))?(?:\s+live|"
                + _APOS + r"[mr]e? living|\s+a[mr]e? living|\s+moved|\s+relocated)"
                r"(?:\s+(?:away\s+)?from\s+[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)?\s+(?:in|to)\s+[A-Z]"),
     "profile:home:city"),
    (re.compile(_I + r"(?:" + _APOS + r"m| am)\s+(\d{1,3})(?:\s+years?\s+old|\s*[.,!]|$)"),
     "profile:age"),
    (re.compile(_I + r" work (?:at|for) [A-Z]"), "profile:job:employer"),
    (re.compile(_I + r" work as an? [a-z]"), "profile:job:title"),
    (re.compile(r"(?:" + _I + r"(?:" + _APOS + r"m| am) (?:originally )?from|" + _I +
                r" grew up in|" + _I + r" was born in) [A-Z]"), "profile:origin"),
    (re.compile(_I + r"(?:" + _APOS + r"m| am) (?:now |happily )?(single|married|engaged|divorced|"
                r"widowed)\b"), "profile:relationship"),
    (re.compile(r"\b(?:[Mm]y|[Oo]ur) (son|daughter|brother|sister|husband|wife|partner|boyfriend|"
                r"girlfriend|mom|dad|mother|father)(?:" + _APOS + r"s name is| is (?:named|called))"
                r" [A-Z][a-z]+\b"), "profile:family:{0}:name"),
    (re.compile(_I + r" have an? (son|daughter|brother|sister) (?:named|called) [A-Z]"),
     "profile:family:{0}:name"),
)
_PEOPLE = (r"son|daughter|brother|sister|husband|wife|partner|boyfriend|girlfriend|fianc[eé]e?|"
           r"mom|mum|dad|mother|father|grandma|grandpa|grandmother|grandfather|aunt|uncle|"
           r"cousin|niece|nephew|friend|best friend|buddy|boss|coworker|colleague|neighbou?r|"
           r"roommate|mentor|teacher|coach")
_NAMED = re.compile(r"\b(?:named|called)\s+([A-Z][a-z]+)|\b(?:[Mm]y|[Oo]ur) " + _PET[:-1] +
                    r"|" + _PEOPLE + r")\s+([A-Z][a-z]+)\b(?!\s+and\s+[A-Z])")
_NAMED_PAIR = re.compile(r"\b(?:[Mm]y|[Oo]ur)\s+(?:\w+\s+)?(?:kids|children|sons|daughters|parents|"
                         r"friends|brothers|sisters|cousins|grandparents|dogs|cats|pets)"
                         r",?\s+([A-Z][a-z]+\s+and\s+[A-Z][a-z]+)\b")
_TRUST = {Role.user: 0.7, Role.assistant: 0.5, Role.tool: 0.5, Role.system: 0.5}
"""Seed 000 §3 trust of what a turn says: the user about themself above the assistant."""
_WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SHIFT, _WEEK_WORD = {"last": -1, "this": 0, "next": 1}, {-1: "before", 0: "of", 1: "after"}
_NUM_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
              "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a couple": 2,
              "couple of": 2, "a few": 3, "few": 3}
_N = r"\d+|a couple(?: of)?|couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten"
_WD = r"(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?\b\.?"
_REL_DATE = re.compile(
    r"(?P<prep>\b(?:since|from|until|till|by|before|after|of|on|in|during|over)\s+)?"
    r"(?<!the )\b(?P<phrase>the day before yesterday|the day after tomorrow|yesterday|today|"
    r"tonight|tomorrow|this (?:morning|afternoon|evening)|last night|"
    r"(?:last|this|next|past) (?:week|weekend|month|year)|"
    r"(?:last|next|this|on|this past|this coming) " + _WD + r"|"
    r"(?P<n>" + _N + r") (?P<unit>day|week|month|year)s? ago|"
    r"in (?P<n2>" + _N + r") (?P<unit2>day|week|month|year)s?(?! ago)(?! time)|"
    r"(?:last|this past) (?P<season>summer|winter|spring|fall|autumn))\b(?!['’])",
    re.I,
)
_DATEPARSER_SETTINGS = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}


def _fmt(d: date) -> str:
    """A date as "7 May 2023"."""
    return f"{d.day} {d:%B} {d.year}"


@lru_cache(maxsize=4096)
def _parse_relative(phrase: str, day: date, prefer: str = "past") -> date | None:
    """`dateparser` on one relative phrase ("last saturday", "2 weeks ago", "next month",
    "in two weeks") against `day`; None when it cannot read it."""
    import dateparser  # imported on first use: it costs ~1 s at import

    settings = dict(_DATEPARSER_SETTINGS, PREFER_DATES_FROM=prefer,
                    RELATIVE_BASE=datetime(day.year, day.month, day.day, 12, 0))
    try:
        parsed = dateparser.parse(phrase, languages=["en"], settings=settings)
    except Exception:  # noqa: BLE001 - a parser failure only means "leave the phrase as it is"
        return None
    return parsed.date() if parsed else None


def _weekday_phrase(p: str, d: date) -> tuple[str, str] | None:
    """"last friday" / "next monday" / "on saturday" → ("on", "5 May 2023")."""
    first, _, rest = p.rpartition(" ")
    try:
        wd = next(i for i, name in enumerate(_WEEKDAY_NAMES) if name.startswith(rest[:3]))
    except StopIteration:
        return None
    if first == "on":  # a bare weekday: the most recent one (past tense is the common case)
        return "on", _fmt(d - timedelta((d.weekday() - wd) % 7 or 7))
    prefer = "future" if first in ("next", "this coming") else "past"
    parsed = _parse_relative(f"{'last' if prefer == 'past' else 'next'} {_WEEKDAY_NAMES[wd]}", d,
                             prefer)
    if first == "this":  # "this saturday": the one of the current week
        parsed = d + timedelta(wd - d.weekday())
    if parsed is None:
        step = (d.weekday() - wd) % 7 or 7
        parsed = d - timedelta(step) if prefer == "past" else d + timedelta((wd - d.weekday()) % 7 or 7)
    return "on", _fmt(parsed)


def _month_of(d: date, delta: int) -> str:
    """"April 2023" for the month `delta` months from `d`."""
    m = d.month - 1 + delta
    return f"{date(d.year + m // 12, m % 12 + 1, 1):%B} {d.year + m // 12}"


_SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}


def _last_season(season: str, d: date) -> str:
    """"last summer" said on `d`: the latest such season already over ("summer 2022"; a winter
    is named by both its years, "winter 2022–23")."""
    start = _SEASON_START[season]
    year = d.year
    while date(year + (start + 3 > 12), (start + 2) % 12 + 1, 1) > d:  # first day after it
        year -= 1
    if season == "winter":
        return f"winter {year}–{(year + 1) % 100:02d}"
    return f"{season} {year}"


def _relative(m: re.Match[str], d: date) -> tuple[str, str] | None:
    """(preposition, resolved text) for one relative date match; None to keep it as it is."""
    p = re.sub(r"\s+", " ", m.group("phrase").lower().rstrip("."))
    first, _, rest = p.partition(" ")
    if p in ("yesterday", "last night", "the day before yesterday", "tomorrow",
             "the day after tomorrow"):
        days = {"tomorrow": 1, "the day before yesterday": -2, "the day after tomorrow": 2}.get(p, -1)
        return "on", _fmt(d + timedelta(days))
    if p in ("today", "tonight") or first == "this" and rest in ("morning", "afternoon", "evening"):
        return "on", _fmt(d)
    if first in ("last", "past", "this", "next") and rest in ("week", "weekend"):
        shift = -1 if first == "past" else _SHIFT[first]
        return "", f"the {rest} {_WEEK_WORD[shift]} {_fmt(d)}"
    if first in ("last", "past", "this", "next") and rest in ("month", "year"):
        shift = -1 if first == "past" else _SHIFT[first]
        if rest == "year":
            return "in", str(d.year + shift)
        parsed = _parse_relative(f"{'last' if shift < 0 else 'next'} month", d) if shift else d
        return "in", f"{parsed:%B} {parsed.year}" if parsed else _month_of(d, shift)
    if season := m.group("season"):
        return "in", _last_season(season.lower(), d)
    if re.fullmatch(r"(?:last|next|this|on|this past|this coming) \w+", p) and not m.group("unit"):
        return _weekday_phrase(p.replace("this past", "last").replace("this coming", "next"), d)
    n_raw, unit = (m.group("n"), m.group("unit")) if m.group("unit") else (m.group("n2"), m.group("unit2"))
    if not unit:
        return None
    n_raw, unit = n_raw.lower(), unit.lower()
    future = bool(m.group("unit2"))
    if n_raw in ("a few", "few"):  # vague: keep the vagueness, anchor it
        when = "after" if future else "before"
        return "", f"a few {unit}s {when} {_fmt(d)}"
    k = int(n_raw) if n_raw.isdigit() else _NUM_WORDS.get(n_raw, 1)
    parsed = _parse_relative(f"in {k} {unit}s" if future else f"{k} {unit}s ago", d,
                             "future" if future else "past")
    if parsed is None:
        days = k * {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * (1 if future else -1)
        parsed = d + timedelta(days)
    if unit == "year":
        return "in", str(parsed.year)
    if unit == "month":
        return "in", f"{parsed:%B} {parsed.year}"
    return ("on" if unit == "day" else "around"), _fmt(parsed)


def resolve_dates(text: str, day: date) -> str:
    """Replace relative dates by dates from `day`: "yesterday" → "on 7 May 2023", "last
    Saturday" → "on 6 May 2023", "two weeks ago" → "around 24 April 2023", "next month" →
    "in June 2023", "last week" → "the week before 8 May 2023" (`dateparser` does the
    calendar arithmetic; the wording keeps the precision of the phrase)."""
    past = is_past_tense(text)

    def sub(m: re.Match[str]) -> str:
        """Replacement of one relative date match."""
        phrase = m.group("phrase").lower()
        if phrase.startswith("on ") and not past:
            return m.group(0)  # "on Saturday": past or coming? only the past tense tells
        if phrase.startswith("in ") and (past or m.group("n2").lower() in ("a", "an", "one")):
            return m.group(0)  # "built in a day", "finished in two weeks": a duration
        resolved = _relative(m, day)
        if resolved is None:
            return m.group(0)
        prep, value = resolved
        given = (m.group("prep") or "").strip()
        if m.start() == 0 and not given and re.match(r"\s+(?:was|is|were|has been)\b", text[m.end():]):
            return value  # "Last Sunday was awesome" → "11 June 2023 was awesome"
        if given.lower() == "over" and prep == "on":  # "came over yesterday": a particle
            return f"{given} on {value}"
        if given:
            return f"{given} {value}" if prep in ("on", "in", "") else f"{given} {prep} {value}"
        return f"{prep} {value}".strip()
    return re.sub(r" +", " ", _REL_DATE.sub(sub, text)).replace(" ,", ",").replace(" .", ".")


def annotations(source: str, day: date) -> dict[str, Any]:
    """The `Fact` fields read from the words a fact was written from, said on `day`: valence
    and intensity (VADER) and the span of the dates it mentions (relative ones resolved)."""
    feeling = sentiment(source)
    span = mentioned_span(resolve_dates(source, day), day)
    return {"valence": feeling.valence, "intensity": feeling.intensity,
            "event_start": span[0] if span else None, "event_end": span[1] if span else None}


def _turn_day(turn: Turn) -> date:
    """The turn's calendar day in its time zone (UTC when unknown)."""
    try:
        return turn.ts.astimezone(ZoneInfo(turn.timezone)).date() if turn.timezone else turn.ts.date()
    except (KeyError, ValueError):
        return turn.ts.date()


def _third_singular(verb: str) -> str:
    """"go" -> "goes", "try" -> "tries"; past forms and modals unchanged."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb in _NO_CONJ or verb.endswith(("ed", "ing")) or (verb.endswith("s") and verb[-2:] != "ss"):
        return verb
    if verb.endswith(("sh", "ch", "ss", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 2 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _place(text: str, name: str, group: str) -> str:
    """Fill the name/group placeholders; "The user" becomes "the user" inside a sentence."""
    out: list[str] = []
    for part in re.split(f"([{_NAME}{_GROUP}{_CO_NAME}])", text):
        if part in (_NAME, _GROUP, _CO_NAME):
            value = group if part == _GROUP else name
            at_start = not "".join(out).strip(" \"'(")
            out.append(value if at_start or not value.startswith("The ") else "t" + value[1:])
        else:
            out.append(part)
    return "".join(out)


def third_person(sentence: str, name: str, *, assistant: bool = False, family: bool = False) -> str:
    """Rewrite first person into the third person naming the speaker."""
    s = _COMPOUND_I.sub(lambda m: m.group(1) + _CO_NAME, sentence)
    for pattern, repl in _REWRITES:
        s = pattern.sub(repl, s)
    s = _I_VERB.sub(lambda m: f"{_NAME}{m.group(1)} {_third_singular(m.group(2))}", s)
    for pattern, repl in _PRONOUNS:
        s = pattern.sub(repl, s)
    if s.startswith(_NAME + " "):  # "X lives in Y and X loves Z" -> "X lives in Y and loves Z"
        # (not after "X's wife …": "X's wife is 40 and X is 42" keeps its second subject)
        s = re.sub(r"\band " + _NAME + r" (?=[a-z])(?!(?:are|were|have|do)\b)", "and ", s)
    if assistant:
        for pattern, repl in _YOU:
            s = pattern.sub(repl, s)
        group = "The user and the assistant"
    else:
        group = f"{name} and family" if family else f"{name} and companions"
    return _place(s, name, group)


def fit(text: str, max_chars: int) -> str:
    """Tidy a summary: one line, capitalised, ends with a period, ≤ max_chars (word boundary)."""
    return normalise_summary(text, max_chars, max_sentences=0)


_SHORT_ABOUT = re.compile(r"^(?:[Ss]he|[Hh]e)(?:\s+(?P<verb>is|was|turned|turns|just turned)|['’]s)\s+"
                          r"(?P<rest>[^.!?]{1,40})[.!?]*$")


def _lower_first(text: str) -> str:
    """"My sister Anna" → "my sister Anna" (a mention put inside another sentence)."""
    return text[:1].lower() + text[1:]


def _resolve_he_she(sentences: list[str]) -> list[str]:
    """"… a dog named Luna. She loves walks." → "… Luna loves walks." (subject he/she only);
    "My kids Max and Lily … They love soccer." → "My kids Max and Lily love soccer." (a
    sentence opening on "they" right after two named people of the speaker's). Across
    sentences the whole mention replaces the pronoun ("She works as a chef." after "My sister
    Anna …" → "My sister Anna works as a chef."), so the fact keeps whose sister Anna is.

    A short attribute with a number right after the naming sentence is joined to it, and
    `split_compound` then makes it its own keyed fact: "I have a dog named Luna. She is 3." →
    "I have a dog named Luna, who is 3." → "… a dog named Luna." + "My dog Luna is 3."
    """
    out, named, pair, mention = [], None, None, ""
    for s in sentences:
        if pair and (m := re.match(r"[Tt]hey(?=\s+[a-z])(?!['’])", s)):  # "They both love …"
            s = pair[:1].upper() + pair[1:] + s[m.end():]
        pair = (_lower_first(found.group(0)) if (found := _NAMED_PAIR.search(s)) else None) or (
            pair if not re.search(r"\b[Tt]hey\b", s) else None)
        if (named and out and (m := _SHORT_ABOUT.match(s)) and _NAMED.search(out[-1])
                and re.search(r"\d", m.group("rest"))):
            out[-1] = f"{out[-1].rstrip('.!')}, who {m.group('verb') or 'is'} {m.group('rest').strip()}."
            continue
        if named:  # the whole mention, so the fact keeps whose sister Anna is
            s = re.sub(r"\b([Ss]he|[Hh]e)\b(?!['’]ll)",
                       lambda h: mention if h.start() else mention[:1].upper() + mention[1:],
                       s, count=1)
        s, namings = _name_the_pronouns(s)
        if namings:
            last = namings[-1]
            named = last.group(1) or last.group(3)
            mention = named if last.group(1) else _lower_first(last.group(0).lstrip())
        out.append(s)
    return out


_HE_SHE = re.compile(r"\b(?:[Ss]he|[Hh]e)\b")


def _name_the_pronouns(s: str) -> tuple[str, list[re.Match[str]]]:
    """`s` with each naming's name put for the first "she" or "he" after it that an earlier
    naming did not take ("a dog named Luna and she …" → "… Luna and Luna …"), and the namings.

    One pass over the pronouns: a naming never looks before its own end, so the pronouns before
    it are passed for good (each naming rescanned the rest of the sentence, the square of its
    length for a sentence of namings). Positions are those of `s` as given (they were read in
    the text as rewritten so far, off by the length a longer or shorter name had added).
    """
    namings = list(_NAMED.finditer(s))
    if not namings:
        return s, namings
    pronouns = [p.span() for p in _HE_SHE.finditer(s)]
    put: dict[int, tuple[int, str]] = {}  # a pronoun's start → (its end, the name put there)
    i = 0
    for m in namings:
        name = m.group(1) or m.group(3)
        if glued := _HE_SHE.match(s[m.end():m.end() + 4]):  # "named MaxShe": the name runs on
            put[m.end()] = (m.end() + glued.end(), name)
            continue
        while i < len(pronouns) and pronouns[i][0] < m.end():
            i += 1
        if i < len(pronouns):
            put[pronouns[i][0]] = (pronouns[i][1], name)
            i += not _HE_SHE.fullmatch(name)  # a dog named He: still a pronoun to the next naming
    pieces, done = [], 0
    for start in sorted(put):
        end, name = put[start]
        pieces += [s[done:start], name]
        done = end
    return "".join([*pieces, s[done:]]), namings


_KIND_OF = re.compile(r"\b(?:(?:an?|my|our)\s+)?" + _PET[:-1] + r"|son|daughter|brother|sister|"
                      r"husband|wife|partner|boyfriend|girlfriend|friend|cousin|niece|nephew)"
                      r"\s+(?:(?:named|called)\s+)?([A-Z][a-z]+)\b")
_ATTRIBUTE = re.compile(r"(?<!\s)(?:\s*+[,;]|\s++(?:-|–|and))\s+(?:who|(?P<name>[A-Z][a-z]+))"
                        r"(?P<verb>\s+(?:is|was|just turned|turned|turns)\b|['’]s\b)"
                        r"(?P<rest>[^,;.!?]*?\d[^,;.!?]*)(?P<end>[,;.!?]|$)")


_ATTRIBUTE_FIRST = re.compile(
    r"^(?P<who>(?:[Mm]y|[Oo]ur)\s+(?:" + _PET[1:-1] + r"|" + _PEOPLE + r")\s+[A-Z][a-z]+)"
    r"(?P<attr>(?:\s+is|\s+was|['’]s|\s+just turned|\s+turned|\s+turns)\s+(?:now\s+)?\d[^,;.!?]*?)"
    r",?\s+and\s+(?P<rest>(?:also\s+|already\s+|really\s+)?(?:[a-z]+s|has|is|was|does)\b[^.!?]*)"
    r"(?P<end>[.!?]*)$")


def split_compound(sentence: str) -> list[str]:
    """A sentence that introduces someone and states a changeable attribute of theirs, as two
    atomic sentences, so that a later change of the attribute supersedes only that part:
    "I adopted a dog named Luna last year, Luna is 3 now." → "I adopted a dog named Luna last
    year." and "My dog Luna is 3 now." (`_resolve_he_she` has put the name for "she"). An
    attribute is a clause with a number ("is 3", "turned 40") about the one just named. The
    same when the attribute comes first: "My son Max is 7 and loves soccer." → "My son Max is
    7." and "My son Max loves soccer."."""
    if first := _ATTRIBUTE_FIRST.match(sentence):  # "My son Max is 7 and loves soccer."
        who = first.group("who")
        return [f"{who}{first.group('attr')}.", f"{who} {first.group('rest').rstrip()}."]
    named = _KIND_OF.search(sentence)
    if not named:
        return [sentence]
    kind, name = named.group(1).lower(), named.group(2)
    m = _ATTRIBUTE.search(sentence, named.end())
    if not m or (m.group("name") and m.group("name") != name):
        return [sentence]
    keep_end = m.group("end") in ",;" and not m.group(0).lstrip(" ,;").startswith("who")
    head = (sentence[:m.start()] + sentence[m.end() - keep_end:]).rstrip(" ,;")
    own = re.search(r"(?<![\w'’])(?:I|[Mm]y|[Ww]e|[Oo]ur)(?![\w'’])", sentence[:m.start()])
    owner = "My" if own else "The"
    verb = " is" if m.group("verb").strip() in ("'s", "’s") else m.group("verb")
    tail = f"{owner} {kind} {name}{verb}{m.group('rest').rstrip()}."
    return [head if head.endswith((".", "!", "?")) else head + ".", tail]


def keyed_span(sentence: str) -> tuple[str, int] | None:
    """The deterministic key of `sentence` (`profile:pet:luna:age`, `profile:home:city`) and
    where the words that state it begin, when a pattern matches."""
    for pattern, template in _KEYS:
        if m := pattern.search(sentence):
            groups = [g.lower() if g else "" for g in m.groups()]
            return (template.format(*groups) if groups else template), m.start()
    return None


def _entity_key(sentence: str) -> str | None:
    """Deterministic key such as `profile:pet:luna:age`, when a pattern matches."""
    keyed = keyed_span(sentence)
    return keyed[0] if keyed else None


def _entities(sentence: str, sig: Signals, speaker: str) -> list[str]:
    """Capitalised names and numbers of the sentence, speaker excluded."""
    found = [re.sub(r"['’]s$", "", e) for e in sig.entities]
    found += re.findall(r"[$€£]?\d+(?:[.,:]\d+)*%?", sentence)
    return [e for e in dict.fromkeys(found) if e and e != speaker][:8]


def _tags(sentence: str, sig: Signals, speaker: str) -> list[str]:
    """Signal tags plus the longest content words, lowercase."""
    tags = signal_tags(sig)
    candidates = [w.lower() for w in words(sentence) if len(w) >= 3 and w.isalpha()]
    for w in sorted(dict.fromkeys(candidates), key=len, reverse=True):
        if len(tags) >= 5:
            break
        if w not in STOPWORDS and w != speaker.lower() and w not in tags:
            tags.append(w)
    return tags


def _looks_like_name(sentence: str, text: str) -> bool:
    """Whether the sentence opens on a proper noun ("Fox Hollow is …", "Aragorn's story …",
    "LeBron …"): two capitalised words, a possessive, inner capitals, or the same word
    capitalised elsewhere in the turn."""
    m = re.match(r"[\"'“]?([A-Z][\w'’.-]*)[,;:]?(?:\s+(\S+))?", sentence)
    if not m:
        return False
    word, nxt = m.group(1), m.group(2) or ""
    bare = re.sub(r"['’]s$", "", word)
    if bare.lower() in _COMMON_OPENERS:
        return False
    if _NAMED_AGE.match(sentence):
        return True
    return bool(
        nxt[:1].isupper() or bare != word or any(c.isupper() for c in bare[1:])
        or re.search(r"(?<=[\w,;:] )" + re.escape(bare) + r"\b", text)
    )


_NAMED_AGE = re.compile(r"[A-Z][a-z]+\s+(?:just\s+)?(?:turned|turns)\s+\d")  # "Luna turned 4"
_COMMON_OPENERS = frozenset((
    "the a an this that these those there it its some all every each both most many much one "
    "no not nothing something everything anything being having life people everyone nobody "
    "family work things thing kids kid today tonight tomorrow yesterday love daily regular "
    "fingers thankfully luckily hopefully sadly honestly what what's whats being hanging "
    "getting seeing doing making taking going having spending watching reading playing "
    "painting writing running hiking cooking dancing sometimes usually lately recently "
    "nature art music books time friends my our"
).split())


def _said(name: str, sentence: str, text: str) -> str:
    """"The hike was steep." said by Ana → "Ana said the hike was steep."."""
    first = sentence if _looks_like_name(sentence, text) else sentence[:1].lower() + sentence[1:]
    return f"{name} said {first}"


_INTENSIFIER = re.compile(  # "really", "super", "totally" …: tone, not content (seed 001 §9)
    # (tried where a run of spaces starts, and taking it whole: see text_rules)
    r"(?<!\s)\s++(?:really|super|totally|just|pretty|kinda|actually|definitely|literally|honestly|"
    r"basically|absolutely|truly|seriously|so+)\b(?=\s+(?!that\b|much\b|many\b|far\b|"
    r"the\b|a\b|an\b|to\b|and\b|or\b|on\b|in\b|for\b|of\b)[a-z])", re.I,
)


def _neutral(text: str) -> str:
    """Neutral tone and finished form: no intensifiers or emoji, "!" → ".", capitalised, a
    terminal period."""
    s = _INTENSIFIER.sub("", _EMOJI.sub("", text)).strip()
    s = re.sub(r"!+(?=\s|$)", ".", s).rstrip(" ,;:-–—")
    if s and not s.endswith((".", "?")):
        s += "."
    return s[:1].upper() + s[1:]


class RulesExtractor:
    """Turn → up to `max_facts` facts, by rules only (an empty list means skip)."""

    def __init__(self, max_facts: int = 3, max_chars: int = 280) -> None:
        """At most `max_facts` facts per turn, summaries of at most `max_chars` (≤ 280)."""
        self.max_facts = max_facts
        self.max_chars = min(max_chars, 280)
        self.stats = {"drafted": 0, "first_pass": 0, "repaired": 0, "rejected": 0}
        """Writing-constraint counters (seed 001 §9) over sentence facts: drafts, drafts that
        passed `validate_summary` as written, drafts that passed only after
        `normalise_summary` (trimmed, punctuation fixed), drafts rejected."""

    def extract(self, turn: Turn) -> list[Fact]:
        """Facts worth remembering from `turn`, in turn order."""
        if turn.role not in (Role.user, Role.assistant):
            return []
        text, caption = strip_caption(turn.text)
        if find_secrets(turn.text):
            return []  # if unsure, don't store (seed 004 §2)
        if turn.role == Role.user and (cmd := parse_command(text)):
            return self._command_facts(turn, cmd.kind, cmd.payload)
        sentences = [atom for s in _resolve_he_she([clean_sentence(s, image=bool(caption))
                                                    for s in split_sentences(text)])
                     for atom in split_compound(s)]
        picked = fact_sentences(sentences, turn.role, (turn.speaker_name,), self.max_facts)
        facts = [f for part in picked if (f := self._sentence_fact(turn, part, text))]
        if not facts and turn.role == Role.user and (note := self._note_fact(turn, text, caption)):
            facts.append(note)
        if (caption and turn.role == Role.user and len(facts) < self.max_facts
                and (fact := self._caption_fact(turn, caption))):
            facts.append(fact)
        return self._dedup(facts)

    def _write(self, turn: Turn, sentence: str, own: bool, text: str) -> str:
        """The draft summary of one sentence: relative dates resolved, third person naming the
        speaker ("Ana said …" for a statement without first person), intensifiers dropped."""
        name = turn.speaker_name
        dated = resolve_dates(sentence, _turn_day(turn))
        rewritten = third_person(dated, name, assistant=turn.role == Role.assistant,
                                 family=bool(_FAMILY.search(text)))
        if not own:
            rewritten = _said(name, rewritten, text)
        return _neutral(rewritten)

    def _sentence_fact(self, turn: Turn, part: Part, text: str) -> Fact | None:
        """One sentence written as a fact, or None when the summary fails the writing
        constraints (seed 001 §9) even after `normalise_summary`."""
        self.stats["drafted"] += 1
        draft = self._write(turn, part.text, part.own, text)
        summary = normalise_summary(draft, self.max_chars)
        kind = self._kind(part.text, part.sig)
        if validate_summary(summary, kind, max_chars=self.max_chars) or find_secrets(summary):
            self.stats["rejected"] += 1
            return None
        if validate_summary(draft, kind, max_chars=self.max_chars):
            self.stats["repaired"] += 1
        else:
            self.stats["first_pass"] += 1
        return self._make(turn, summary, kind, part.text, part.sig)

    @staticmethod
    def _kind(sentence: str, sig: Signals) -> str:
        """semantic | episodic | procedural; a deterministic key makes it semantic."""
        return "semantic" if _entity_key(sentence) else memory_type(sentence, sig)

    def _make(self, turn: Turn, summary: str, kind: str, source: str, sig: Signals, *,
              explicit: bool = False, pinned: bool = False, extra_tags: tuple[str, ...] = (),
              salience_value: float | None = None) -> Fact:
        """The fact record: category, importance, valence/intensity, the dates it mentions,
        tags, entities and key from `source` (the turn's own words)."""
        name = turn.speaker_name
        key = _entity_key(source)
        full = sentence_signals(source)
        notes = annotations(source, _turn_day(turn))
        feeling = Sentiment(notes["valence"], notes["intensity"])
        inputs = ImportanceInputs(
            salience=salience(source, full, key is not None, summary,
                              dated=notes["event_start"] is not None)
            if salience_value is None
            else salience_value,
            trust=_TRUST[turn.role], intensity_norm=intensity_norm(feeling), explicit=explicit,
            pinned=pinned)
        return Fact(
            type=kind, summary=summary, category=categorise(source),
            importance=importance_level(inputs), **notes,
            tags=list(dict.fromkeys([*extra_tags, *_tags(source, full, name)]))[:6],
            entities=_entities(source, full, name), entity_key=key,
        )

    def _command_facts(self, turn: Turn, kind: CommandKind, payload: str) -> list[Fact]:
        """"remember …" / "pin …": the payload as one high-importance fact."""
        if kind not in (CommandKind.remember, CommandKind.pin) or not payload:
            return []
        sig = sentence_signals(payload)
        summary = self._checked_summary(turn, payload, True, payload)
        if summary is None:
            return []
        kind_ = self._kind(payload, sig)
        return [self._make(turn, summary, kind_, payload, sig, explicit=True,
                           pinned=kind == CommandKind.pin, extra_tags=("explicit",))]

    def _note_fact(self, turn: Turn, text: str, caption: str | None) -> Fact | None:
        """What a user said, when no sentence of the turn made a fact (`note_sentence`): its
        most contentful sentence, written as the speaker's ("Jon said …" or, in the first
        person, "Jon …")."""
        sentence = note_sentence(text, (turn.speaker_name,), image=bool(caption))
        if sentence is None:
            return None
        sig = sentence_signals(sentence)
        summary = self._checked_summary(turn, sentence, sig.first_person, text)
        if summary is None:
            return None
        return self._make(turn, summary, "semantic", sentence, sig, extra_tags=("note",))

    def _checked_summary(self, turn: Turn, sentence: str, own: bool, text: str) -> str | None:
        """`sentence` written as a semantic fact's summary (`_write`, `normalise_summary`), or
        None when it fails the writing constraints or holds a secret."""
        summary = normalise_summary(self._write(turn, sentence, own, text), self.max_chars)
        if validate_summary(summary, "semantic", max_chars=self.max_chars) or find_secrets(summary):
            return None
        return summary

    def _caption_fact(self, turn: Turn, caption: str) -> Fact | None:
        """A shared image (LoCoMo caption) as a low-importance fact."""
        caption = re.sub(r"^an?\s+(?:photograph|photography|picture|pic)\b", "a photo", caption.strip(),
                         flags=re.I)
        photo = re.match(r"an?\s+(?:photo|image|screenshot)\b", caption, re.I)
        what = caption if photo else f"a photo of {caption}"
        summary = normalise_summary(f"{turn.speaker_name} shared {what}", self.max_chars)
        if validate_summary(summary, "semantic", max_chars=self.max_chars):
            return None
        fact = self._make(turn, summary, "semantic", caption, sentence_signals(caption),
                          extra_tags=("image",), salience_value=1 / 3)
        return fact.model_copy(update={"category": "Personal", "entity_key": None})

    @staticmethod
    def _dedup(facts: list[Fact]) -> list[Fact]:
        """Drop facts whose summary repeats an earlier one."""
        seen: set[str] = set()
        return [f for f in facts if not (f.summary.lower() in seen or seen.add(f.summary.lower()))]
