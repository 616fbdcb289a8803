"""Who "we" is in a speaker's sentence: the others the turn names, or nobody.

A fact is written in the third person naming the speaker (`streams/language/rewriting.py`).
"We're flying to Lisbon" said by Raj does not say who flies with him; writing "Raj and
companions" invents a party the turn never mentioned ("Caroline and companions can accept who
Caroline and companions are"). So "we" is the speaker alone ("Raj is flying to Lisbon …"),
unless another sentence of the turn names who the speaker is with: "Mia and I …" → "Raj and
Mia", "my wife …" → "Raj and Raj's wife", "my family …" → "Raj and Raj's family". A mention in
the same sentence is not used: "We went hiking with my friends" already names them, and "for my
cousin's wedding" names someone the speaker is not "we" with.
"""
from __future__ import annotations

import re

_RELATION = re.compile(
    r"\b(?:[Mm]y|[Oo]ur)\s+(?P<who>family|fam|husband|wife|partner|spouse|boyfriend|girlfriend|"
    r"fianc[eé]e?|kids|children|parents)\b")
_NAMED_WITH_ME = re.compile(r"\b(?P<who>[A-Z][a-z]+) and I\b")
_PLURAL_WORD = {"fam": "family"}


def companions(sentence: str, text: str) -> str | None:
    """Who besides the speaker "we" stands for in `sentence` of the turn `text`, as a noun
    phrase to follow "<speaker> and " (`"Mia"`, or `"{name}'s wife"` with `{name}` left for
    the speaker's name), or None when the rest of the turn names nobody."""
    in_sentence = {m.group("who") for m in _NAMED_WITH_ME.finditer(sentence)}
    named = [m.group("who") for m in _NAMED_WITH_ME.finditer(text)
             if m.group("who") not in in_sentence]
    if named:
        return named[0]
    mentioned = {m.group("who").lower() for m in _RELATION.finditer(sentence)}
    found = [w for m in _RELATION.finditer(text) if (w := m.group("who").lower()) not in mentioned]
    if not found:
        return None
    who = "family" if any(w in ("family", "fam") for w in found) else found[0]
    return "{name}'s " + _PLURAL_WORD.get(who, who)
