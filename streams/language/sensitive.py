"""Sensitive personal data (seed 004 §2): health, religious or political identity, exact address.

Such facts are not stored unless the user explicitly asks ("remember that …"). Rules are
deliberately narrow — they look for statements *about the speaker*, not for topics merely
mentioned ("we talked about the election" is not a political identity).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

_SUBJECT = r"(?:\b[A-Z][a-z]+(?:'s)?|\bI|\bI'm|\bmy|\bhe|\bshe|\bthey)"
PATTERNS: dict[str, re.Pattern[str]] = {
    "health": re.compile(
        r"\b(?:diagnosed with|was diagnosed|(?:takes|taking|prescribed|on) (?:medication|meds|"
        r"insulin|antidepressants|chemo(?:therapy)?)|(?:has|have|suffers? from|living with|"
        r"battling) (?:diabetes|cancer|hiv|aids|epilepsy|depression|bipolar|schizophrenia|"
        r"an? (?:eating|anxiety|panic) disorder|adhd|autism|asthma|hepatitis|(?:high|low) blood "
        r"pressure|a (?:heart|kidney|liver) condition)|miscarriage|(?:is|am|got) pregnant|"
        r"hiv[- ]positive|in rehab|sobriety|relapsed)\b",
        re.I,
    ),
    "religion": re.compile(
        r"\b(?:(?:is|am|'m|are) (?:a |an )?(?:devout |practicing |practising )?(?:christian|"
        r"catholic|protestant|muslim|jewish|jew|hindu|buddhist|sikh|mormon|atheist|agnostic)|"
        r"(?:converted|convert) to (?:christianity|islam|judaism|hinduism|buddhism|catholicism)|"
        r"(?:my|his|her|their) (?:religion|faith) is)\b",
        re.I,
    ),
    "politics": re.compile(
        r"\b(?:(?:voted|votes|vote) (?:for|labour|tory|republican|democrat)|(?:is|am|'m|are) "
        r"(?:a |an )?(?:registered )?(?:democrat|republican|conservative|liberal|socialist|"
        r"communist|libertarian|tory)|member of the (?:\w+ )?party|(?:my|his|her) political "
        r"(?:views|affiliation))\b",
        re.I,
    ),
    "address": re.compile(
        r"\b\d{1,5}[A-Za-z]?,? (?:[A-Z][\w'-]+ ){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|"
        r"Boulevard|Blvd|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace)\b|\b(?:Rua|Calle|Via|Rue|"
        r"Avenida|Straße|Strasse) [A-Z][\w'-]+(?: [A-Z][\w'-]+)*,? \d{1,5}\b|\b(?:Rua|Calle|Via|Rue|"
        r"Avenida) (?:[A-Z][\w'-]+ ?){1,3}\b.{0,3}\d{1,5}\b|\b\d{1,5} (?:Rua|Calle|Via|Rue|Avenida) "
        r"[A-Z][\w'-]+",
    ),
}


def sensitive_categories(text: str, enabled: Iterable[str]) -> list[str]:
    """The enabled sensitive categories `text` states something about."""
    return [name for name in enabled if name in PATTERNS and PATTERNS[name].search(text)]
