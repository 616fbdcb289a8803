"""Recall intent and time phrases of a query ("what did we discuss last week", "in March").

A time phrase becomes a window of dates that episodic items (dated `date_iso` in the user's
zone) must fall in. The phrase is found by the patterns below; its date and its granularity
(day, week, month, year) come from `dateparser`, resolved against the query's reference time
and preferring the past, so "in March" asked in May is this year's March and asked in February
is last year's.
"""
from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from dateparser.date import DateDataParser

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_COUNT = r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+couple\s+of|a\s+few)"
_YEAR = r"(?:19|20)\d\d"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"

TIME_PHRASE = re.compile(
    rf"""\b(?:
        (?:last|this|past|previous)\s+(?:week|month|year|{_WEEKDAY})
      | yesterday | today
      | {_COUNT}\s+(?:days?|weeks?|months?|years?)\s+ago
      | (?:on\s+)?{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?
      | (?:on\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?
      | (?:in|during|since)\s+(?:early\s+|late\s+|mid[-\s])?{_MONTH}(?:\s+{_YEAR})?
      | (?:in|during)\s+{_YEAR}
      | on\s+{_WEEKDAY}
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)
_LEAD = re.compile(r"^(?:(?:on|in|during|since|the|early|late|mid)[\s-]+)+", re.IGNORECASE)

RECALL = re.compile(
    r"""\b(?:
        what\s+did\s+(?:we|i|you)\s+(?:discuss|talk|say|decide|agree|plan|do|chat)
      | what\s+(?:have|had)\s+we\s+(?:discussed|talked|decided)
      | (?:do|did)\s+you\s+remember | remember\s+when | remind\s+me
      | last\s+time\s+(?:we|i) | when\s+did\s+(?:we|i)
      | we\s+(?:discussed|talked\s+about|spoke\s+about|chatted\s+about|decided|agreed)
      | when\s+(?:did|was|were) | how\s+long\s+ago | what\s+did\s+\w+\s+do\b
      | (?:our|the)\s+(?:last\s+)?(?:conversation|chat|discussion|session)s?
      | recap | catch\s+me\s+up | earlier\s+today
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)


@dataclass(frozen=True)
class DateWindow:
    """Inclusive dates of the user's calendar."""

    phrase: str
    start: date
    end: date

    def contains(self, date_iso: str | None) -> bool:
        return date_iso is not None and self.start.isoformat() <= date_iso <= self.end.isoformat()


def has_recall_intent(text: str) -> bool:
    """The query asks about past conversations or events, not (only) stable facts."""
    return bool(RECALL.search(text) or TIME_PHRASE.search(text))


def _span(day: date, period: str) -> tuple[date, date]:
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=6)
    if period == "month":
        return day.replace(day=1), day.replace(day=calendar.monthrange(day.year, day.month)[1])
    if period == "year":
        return date(day.year, 1, 1), date(day.year, 12, 31)
    return day, day


def time_window(text: str, reference: datetime) -> DateWindow | None:
    """The window of the first time phrase of `text` that dateparser resolves, else None.

    `reference` is the query's "now" in the user's zone ("yesterday" is the user's yesterday).
    """
    parser = DateDataParser(languages=["en"], settings={
        "RELATIVE_BASE": reference.replace(tzinfo=None), "PREFER_DATES_FROM": "past",
        "RETURN_AS_TIMEZONE_AWARE": False,
    })
    for match in TIME_PHRASE.finditer(text):
        phrase = match.group(0)
        data = parser.get_date_data(_LEAD.sub("", phrase.strip()))
        if data.date_obj is None:
            continue
        start, end = _span(data.date_obj.date(), data.period or "day")
        today = reference.date()
        if phrase.lower().startswith("since"):
            end = today
        elif start <= today < end:  # "this week": nothing after today has happened yet
            end = today
        return DateWindow(phrase, start, end)
    return None
