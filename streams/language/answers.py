"""Short answers to a proposal: "yes, update it" / "no, keep the old one".

The words of a chat acknowledgement of a profile change that waits for consent (seed 001 §10,
streams/memory/consent.py `acknowledgement`, which also checks who said it and when).
"""
from __future__ import annotations

import re
from typing import Literal

_VERB = r"(?:update|change|apply|save|use|switch)"
_OBJ = r"(?:\s+(?:it|that|this|them|my\s+(?:name|pronouns|city|language|profile)))?"
_ACCEPT = re.compile(
    r"^\s*(?:(?:yes|yeah|yep|yup|sure|ok|okay|correct|right)\b[\s,!.]*)+(?:please\s+)?"
    r"(?:(?:go\s+ahead\s+and\s+)?" + _VERB + _OBJ + r"|do\s+it|go\s+ahead)"
    r"(?:[\s,]+please)?[\s.!]*$|^\s*(?:please\s+)?(?:go\s+ahead\s+and\s+)?" + _VERB + _OBJ +
    r"(?:[\s,]+please)?[\s.!]*$", re.I)
_REJECT = re.compile(
    r"^\s*(?:(?:no|nope|nah)\b[\s,!.]*)+(?:please\s+)?(?:(?:don'?t|do\s+not)\s+" + _VERB + _OBJ +
    r"|keep\s+(?:it|the\s+old\s+one|the\s+old\s+value)|leave\s+it)?[\s.!]*$", re.I)


def consent_answer(text: str) -> Literal["accept", "reject"] | None:
    """"accept" for a whole short yes ("yes, update it", "go ahead"), "reject" for a whole short
    no ("no, keep the old one"; a bare "no" answers anything, so it is none), else None."""
    if _ACCEPT.match(text):
        return "accept"
    if _REJECT.match(text) and len(text.split()) > 1:  # a bare "no" answers anything
        return "reject"
    return None
