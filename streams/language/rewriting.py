"""Rewriting a sentence as a fact's summary: third person naming the speaker, neutral tone.

"I'm 3 weeks into my new job and I love it!" said by Ana → "Ana is 3 weeks into Ana's new job
and Ana loves it." (`third_person`: pronouns and verb agreement); a statement without first
person is attributed ("The trail is steep." → "Ana said the trail is steep.", `said`);
intensifiers, emoji and exclamations are dropped and the summary finished (`neutral`, seed 001
§9). `fact_summary` does it all, relative dates first (`streams/language/dates.py`).
"""
from __future__ import annotations

import re
from datetime import date

from streams.language.companions import companions
from streams.language.dates import resolve_dates
from streams.language.wordlists import word_list, word_sequence

_NAME, _GROUP, _CO_NAME = "\x01", "\x02", "\x03"  # _CO_NAME: "my husband and I" (no agreement)
APOS = "['’]"
"""An apostrophe, straight or curly."""
_APOS = APOS
_EMOJI = re.compile("[\U0001F000-\U0001FFFF\u2600-\u27BF\uFE0F]+")
_ADVERBS = "|".join(word_sequence("adverbs"))
_NO_CONJ = word_list("verbs_unconjugated")
_BASE_ED_ING = word_list("verbs_base_ed_ing")
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is"}
I_ALONE = r"(?<![\w'’.])[Ii](?!\.[A-Za-z])"
"""The pronoun "I" (not inside a word, after an apostrophe, nor one of an initialism's letters:
"M.I.T.")."""
_I = I_ALONE
_REWRITES = tuple((re.compile(_I + p), _NAME + r) for p, r in (
    (_APOS + r"m\b|(?<![\w'’])[Ii] am\b", " is"), (r" was\b", " was"),
    (r" haven" + _APOS + r"t\b", " hasn't"), (_APOS + r"ve\b|(?<![\w'’])[Ii] have\b", " has"),
    (_APOS + r"ll\b", " will"), (_APOS + r"d (been|gone|had|seen|done|never|already|ever)\b", r" had \1"),
    (_APOS + r"d\b", " would"), (r" don" + _APOS + r"t\b", " doesn't"),
    (r" do not\b", " does not"), (r" do\b", " does"),
))
_COMPOUND_I = re.compile(
    r"((?:^|[,;:–—]\s*|\s-\s*|\b(?:when|because|since|but|where)\s+)(?:[Mm]y\s+|[Oo]ur\s+|[Tt]he\s+)?"
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
_WE_ALONE = tuple((re.compile(p), r) for p, r in (
    (r"\b[Ww]e(?:['’]re| are)\b", "I am"), (r"\b[Ww]e aren['’]t\b", "I am not"),
    (r"\b[Ww]e were\b", "I was"), (r"\b[Ww]e weren['’]t\b", "I wasn't"),
    (r"\b[Ww]e\b(?!\s+(?:should|must)\b)", "I"), (r"\bus\b", "me"), (r"\b[Oo]urselves\b", "myself"),
))
""""We" when the turn names nobody the speaker is with (`streams.language.companions`): the
speaker alone, in the first person singular, so the rules below agree the verb ("we were" →
"I was" → "Ana was")."""
_YOU = tuple((re.compile(p, re.I), r) for p, r in (
    (r"\byou" + _APOS + r"re\b|\byou are\b", "the user is"), (r"\byou" + _APOS + r"ve\b", "the user has"),
    (r"\byou" + _APOS + r"ll\b", "the user will"), (r"\byou" + _APOS + r"d\b", "the user would"),
    (r"\byour\b", "the user's"), (r"\byou\b", "the user"),
))


def _third_singular(verb: str) -> str:
    """"go" -> "goes", "try" -> "tries"; past forms and modals unchanged."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb in _NO_CONJ or (verb.endswith(("ed", "ing")) and verb not in _BASE_ED_ING) or (
            verb.endswith("s") and verb[-2:] != "ss"):
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


def third_person(sentence: str, name: str, *, assistant: bool = False,
                 others: str | None = None) -> str:
    """Rewrite first person into the third person naming the speaker. "We" is the speaker and
    `others` ("Mia", "{name}'s wife": `streams.language.companions`), or the speaker alone
    when `others` is None; in an assistant's sentence, the user and the assistant."""
    s = sentence
    if not assistant and others is None:
        for pattern, repl in _WE_ALONE:
            s = pattern.sub(repl, s)
    s = _COMPOUND_I.sub(lambda m: m.group(1) + _CO_NAME, s)
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
        group = f"{name} and {(others or '').format(name=name)}"
    return _place(s, name, group)


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
_COMMON_OPENERS = word_list("common_openers")


def said(name: str, sentence: str, text: str) -> str:
    """"The hike was steep." said by Ana → "Ana said the hike was steep."."""
    first = sentence if _looks_like_name(sentence, text) else sentence[:1].lower() + sentence[1:]
    return f"{name} said {first}"


_INTENSIFIER = re.compile(  # "really", "super", "totally" …: tone, not content (seed 001 §9)
    # (tried where a run of spaces starts, and taking it whole: see streams/language/sentences.py)
    r"(?<!\s)\s++(?:really|super|totally|just|pretty|kinda|actually|definitely|literally|honestly|"
    r"basically|absolutely|truly|seriously|"
    # "so" before a subject, or after a comma, joins two clauses ("…, so we're getting a kitten")
    r"(?<![,;]\s)so+(?!\s+(?-i:[A-Z])|\s+(?:i|we|you|he|she|they|it|my|our|his|her|their|there)\b))"
    r"\b(?=\s+(?!that\b|much\b|many\b|far\b|"
    r"the\b|a\b|an\b|to\b|and\b|or\b|on\b|in\b|for\b|of\b)[a-z])", re.I,
)


def neutral(text: str) -> str:
    """Neutral tone and finished form: no intensifiers or emoji, "!" → ".", capitalised, a
    terminal period."""
    s = _INTENSIFIER.sub("", _EMOJI.sub("", text)).strip()
    s = re.sub(r"!+(?=\s|$)", ".", s).rstrip(" ,;:-–—")
    if s and not s.endswith((".", "?")):
        s += "."
    return s[:1].upper() + s[1:]


def fact_summary(sentence: str, name: str, day: date, *, assistant: bool, own: bool,
                 text: str) -> str:
    """The draft summary of one sentence of `text` said by `name` on `day`: relative dates
    resolved, third person naming the speaker ("Ana said …" for a statement without first
    person, `own` False), intensifiers dropped. `assistant`: the assistant said it ("you" is
    the user)."""
    dated = resolve_dates(sentence, day)
    rewritten = third_person(dated, name, assistant=assistant,
                             others=None if assistant else companions(sentence, text))
    if not own:
        rewritten = said(name, rewritten, text)
    return neutral(rewritten)
