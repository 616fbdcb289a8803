"""Which profile fields a user states about themself, in the first person, in a chat turn.

Seed 001 §10 lets a sensitive profile field (preferred name, pronouns, home city, language)
change only with the user's consent, "UI or explicit chat ack". The user saying the new value
in their own words — "I moved to Lisbon", "call me Sam", "my pronouns are they/them now" — is
that acknowledgement, so such a change applies at once (`streams.memory.consent`). What is not:
the assistant's words, someone else's reported ("my friend says I live in …"), a hedge ("I
think I live in …"), a condition ("if I moved to …"), a question, and a value a model inferred
from words that do not state the field ("loving my new flat in Lisbon").
"""
from __future__ import annotations

import re

from streams.language.captions import split_image_caption
from streams.language.mentions import keyed_span
from streams.language.splitting import split_sentences
from topics.turns import Role, Turn

_NOT_FIRST_HAND = re.compile(
    # someone else's words, or the user's doubt, before the words that state the field
    r"\b(?:says?|said|saying|thinks?|thought|tells?|told|believes?|claims?|mentioned|heard|"
    r"reckons?|insists?|according to|apparently|supposedly|guess|suppose|maybe|perhaps|"
    r"probably|might|not sure|if|whether|unless|pretend|imagine)\b", re.I)


def first_person_keys(turn: Turn) -> list[str]:
    """The profile keys (`profile:home:city`, `profile:name`, …) that `turn` states plainly,
    in the first person, as the user's own words in chat; empty for any other turn."""
    if turn.role != Role.user or turn.source != "chat":
        return []
    text, _ = split_image_caption(turn.text)
    keys = []
    for sentence in split_sentences(text):
        keyed = keyed_span(sentence)
        if keyed is None or sentence.rstrip().endswith("?"):
            continue
        key, start = keyed
        if not _NOT_FIRST_HAND.search(sentence[:start]):
            keys.append(key)
    return keys
