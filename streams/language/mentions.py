"""Who and what a sentence names: pronouns resolved to the name they stand for, a sentence
split where it states a changeable attribute of someone it names, the deterministic profile key
a sentence states (`profile:pet:luna:age`, `profile:home:city`), a fact's entities and tags.
"""
from __future__ import annotations

import re

from streams.language.memo import text_memo
from streams.language.rewriting import APOS as _APOS
from streams.language.rewriting import I_ALONE as _I
from streams.language.sentences import STOPWORDS, words
from streams.language.signals import Signals, signal_tags

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


_SHORT_ABOUT = re.compile(r"^(?:[Ss]he|[Hh]e)(?:\s+(?P<verb>is|was|turned|turns|just turned)|['’]s)\s+"
                          r"(?P<rest>[^.!?]{1,40})[.!?]*$")


def _lower_first(text: str) -> str:
    """"My sister Anna" → "my sister Anna" (a mention put inside another sentence)."""
    return text[:1].lower() + text[1:]


def resolve_he_she(sentences: list[str]) -> list[str]:
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
    year." and "My dog Luna is 3 now." (`resolve_he_she` has put the name for "she"). An
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


@text_memo
def entity_key(sentence: str) -> str | None:
    """Deterministic key such as `profile:pet:luna:age`, when a pattern matches."""
    keyed = keyed_span(sentence)
    return keyed[0] if keyed else None


def fact_entities(sentence: str, sig: Signals, speaker: str) -> list[str]:
    """Capitalised names and numbers of the sentence, speaker excluded."""
    found = [re.sub(r"['’]s$", "", e) for e in sig.entities]
    found += re.findall(r"[$€£]?\d+(?:[.,:]\d+)*%?", sentence)
    return [e for e in dict.fromkeys(found) if e and e != speaker][:8]


def fact_tags(sentence: str, sig: Signals, speaker: str) -> list[str]:
    """Signal tags plus the longest content words, lowercase."""
    tags = signal_tags(sig)
    candidates = [w.lower() for w in words(sentence) if len(w) >= 3 and w.isalpha()]
    for w in sorted(dict.fromkeys(candidates), key=len, reverse=True):
        if len(tags) >= 5:
            break
        if w not in STOPWORDS and w != speaker.lower() and w not in tags:
            tags.append(w)
    return tags
