"""The category of a fact: one of docs/decisions.md's defaults by cue rules.

Each category has cues, regular expressions over word stems, with a weight: a *framing* cue
says what the sentence is about as a whole ("I want to …", "saving up for …", "my budget") and
weighs 2, a *topic* word ("salary", "exam") weighs 1. The category with the highest sum wins,
ties going to the earlier one in `_CUES` (Budget before Finance: "saving up for a car" is about
spending, not money held; Goals before Education: "I want to learn Italian" is an ambition).
A sentence with no cue is Personal when it is about the speaker (first person: their life,
job, family, tastes, feelings) and Other when it is about something else ("the trail is steep").
Conversation_Summary is not chosen here: only the episodic capture writes it.

Measured with `python -m benchmarks.category_accuracy` on the labelled set.
"""
from __future__ import annotations

import re

_FIRST_PERSON = re.compile(r"(?<![\w'’])(?:I|[Mm]y|[Mm]e|[Mm]ine|[Ww]e|[Oo]ur|[Uu]s)(?![\w])")


def _cues(*pairs: tuple[float, str]) -> tuple[tuple[float, re.Pattern[str]], ...]:
    return tuple((w, re.compile(r"(?<![\w'’])(?:" + p + r")", re.I)) for w, p in pairs)


_CUES: tuple[tuple[str, tuple[tuple[float, re.Pattern[str]], ...]], ...] = (
    ("Budget", _cues(
        (2, r"budget\w*|afford\w*|sav(?:e|ed|ing)\s+(?:up|money|for|to)\b|"
            r"(?:put|putting|set|setting)\s+(?:\w+\s+){0,3}aside|"
            r"cut(?:ting)?\s+(?:back|costs?|down)|spend(?:ing)?\s+less|keep\s+costs|"
            r"(?:watch|track|limit)\w*\s+(?:my\s+|our\s+|the\s+)?(?:spending|expenses?)"),
        (1, r"spend(?:s|ing)?\b|spent\b|expenses?\b|cheap\w*|expensive|in\s+bulk|"
            r"second[-\s]hand|compare\s+prices|envelope\s+method|cost\s+more|overspen\w*|"
            r"thrift\w*|frugal|coupons?\b|discounts?\b|sales?\b"),
    )),
    ("Goals", _cues(
        (2, r"goals?\b|dreams?\s+(?:is|of)|my\s+dream|aim(?:ing)?\s+(?:to|for)|aspir\w*|"
            r"ambitions?\b|resolutions?\b|hop(?:e|ing)\s+to|want\s+to|wanna|would\s+love\s+to|"
            r"'d\s+love\s+to|would\s+like\s+to|'d\s+like\s+to|determined\s+to|"
            r"working\s+(?:towards?|on\s+becoming)|training\s+for|one\s+day|someday|eventually|"
            r"plan(?:ning)?\s+to|intend\w*\s+to|trying\s+to\s+(?:quit|lose|get|become|be)|"
            r"going\s+to\s+try|bucket\s+list"),
        (1, r"career|become|achieve\w*|succeed|ambitious"),
    )),
    ("Finance", _cues(
        (2, r"salary|paycheck|income|mortgage|loans?\b|debts?\b|invest\w*|portfolio|"
            r"stocks?\b|shares\s+of|dividends?|crypto\w*|bitcoin|pension|retirement\s+(?:account|fund)|"
            r"tax(?:es)?\b|tax\s+return|refund|bank(?:s|ing)?\b|bank\s+account|overdraft|credit\s+card|"
            r"interest\s+rate|insurance|premium|accountant|emergency\s+fund|inherit\w*|"
            r"financ\w*|money"),
        (1, r"rais(?:e|ed)\b|bonus|earn\w*|paid\b|pay(?:s|ing)?\b|bills?\b|rent\b|fees?\b|"
            r"profit\w*|owe[sd]?\b|lent\b|lend\w*|savings|account\b|funds?\b|"
            # an amount ("2.5k", "3 grand") read once from where its digits start: tried
            # from every digit of "1,1,1,…" it cost time quadratic in the run
            r"dollars?|euros?|pounds\b|\$|€|£|(?<![\d,.])\d[\d,.]*+\s*+(?:k|grand)\b"),
    )),
    ("Education", _cues(
        (2, r"school\w*|kindergarten|college|universit\w*|degree|diploma|thesis|dissertation|"
            r"ph\.?d|master'?s|undergrad\w*|bachelor'?s|graduat\w*|enroll\w*|semester|"
            r"exams?\b|midterms?|finals?\b|gre\b|gmat|sat\b|homework|scholarship|professor|"
            r"lectures?\b|tutor\w*|bootcamp|curriculum|certificat\w*|coursework"),
        (1, r"stud(?:y|ies|ied|ying)|class(?:es)?\b|course\w*|teach\w*|students?\b|"
            r"learn\w*|lessons?\b|modules?\b|program(?:me)?\b|test\b|essay|grades?\b|"
            r"workshop|educat\w*|academ\w*|research"),
    )),
)


def category_scores(text: str) -> dict[str, float]:
    """The weighted cue count of each category for `text`."""
    return {name: sum(w * len(p.findall(text)) for w, p in cues) for name, cues in _CUES}


def categorise(text: str) -> str:
    """The docs/decisions.md default category of a fact written from `text` (the speaker's own words)."""
    scores = category_scores(text)
    best = max(scores.values())
    if best > 0:
        return next(name for name, value in scores.items() if value == best)
    return "Personal" if _FIRST_PERSON.search(text) else "Other"
