"""The dates a fact mentions, as a span of calendar days, besides the day it was said.

"Ana painted it in 2022", said in 2023, happened in 2022: the memory keeps that span
(`event_start`, `event_end`) so a time filter ("what did Ana do in 2022") finds it, while
`date_iso` / `created_at` keep when it was said. The extractor first rewrites relative dates
into absolute ones (`extraction.resolve_dates`: "last year" → "in 2022", "yesterday" → "on
7 May 2023", "last week" → "the week before 8 May 2023"); this module reads those forms and the
absolute dates people write themselves ("in March 2021", "on May 3rd", "back in 2019"), each at
its own precision: a day, a week, a month, a season or a year. A fact naming several dates
spans from the first to the last.
"""
from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

_MONTHS = {name: i for i in range(1, 13) for name in
           (calendar.month_name[i].lower(), calendar.month_abbr[i].lower())} | {"sept": 9}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11)}

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(p, re.I)) for kind, p in (
    ("week", r"\bthe (?:week|weekend) (?P<rel>before|of|after) " + _DAY + r" " + _MONTH + r",? " + _YEAR),
    ("few", r"\ba few (?P<unit>day|week|month|year)s (?P<rel>before|after) " + _DAY + r" " + _MONTH
            + r",? " + _YEAR),
    ("day", r"\b" + _DAY + r"(?: of)? " + _MONTH + r",? " + _YEAR + r"\b"),
    ("day", r"\b" + _MONTH + r" " + _DAY + r",? " + _YEAR + r"\b"),
    ("winter", r"\bwinter (?P<year>(?:19|20)\d\d)\s*[–-]\s*\d\d\b"),
    ("season", r"\b(?P<season>spring|summer|fall|autumn|winter) (?:of )?" + _YEAR + r"\b"),
    ("month", r"\b" + _MONTH + r",? " + _YEAR + r"\b"),
    ("day_no_year", r"\b(?:on|since|until|by) (?:the )?" + _DAY + r"(?: of)? " + _MONTH + r"\b(?!,? \d)"),
    ("day_no_year", r"\b(?:on|since|until|by) " + _MONTH + r" " + _DAY + r"\b(?!,? \d)"),
    ("month_no_year", r"\b(?:in|during|since|until|by|early|late|mid) " + _MONTH + r"\b(?!,? \d)"),
    ("year", r"(?<![\d$€£.,])\b" + _YEAR + r"\b(?![\d%]|,\d|\.\d)"),
))


def _month_span(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _nearest(d: date, said: date) -> date:
    """A day named without a year: of the same day last year, this year and next year, the
    nearest to `said` ("on May 20th" said on 8 May is coming, said in November it is past)."""
    years = [y for y in (d.year - 1, d.year, d.year + 1) if not (d.month == 2 and d.day == 29)
             or calendar.isleap(y)]
    return min((d.replace(year=y) for y in years), key=lambda x: abs((x - said).days))


def _span(kind: str, m: re.Match[str], said: date) -> tuple[date, date] | None:
    """The days one match covers, or None when it names no valid date."""
    g = m.groupdict()
    month = _MONTHS.get((g.get("month") or "").lower().rstrip("."))
    year = int(g["year"]) if g.get("year") else None
    try:
        if kind in ("day", "week", "few"):
            day = date(year or said.year, month or 1, int(g["day"]))
            if kind == "day":
                return day, day
            if kind == "few":
                unit = {"day": 1, "week": 7, "month": 30, "year": 365}[g["unit"].lower()]
                return ((day - timedelta(unit * 5), day) if g["rel"].lower() == "before"
                        else (day, day + timedelta(unit * 5)))
            start = day - timedelta(day.weekday()) + timedelta(7 * {"before": -1, "of": 0, "after": 1}
                                                               [g["rel"].lower()])
            return start, start + timedelta(6)
        if kind == "month":
            return _month_span(year or said.year, month or 1)
        if kind == "winter":
            assert year is not None
            return date(year, 12, 1), date(year + 1, 3, 1) - timedelta(1)
        if kind == "season":
            assert year is not None
            season = g["season"].lower()
            if season == "winter":
                return date(year, 1, 1), date(year, 3, 1) - timedelta(1)
            first, last = _SEASONS[season]
            return date(year, first, 1), _month_span(year, last)[1]
        if kind == "day_no_year":
            day = _nearest(date(said.year, month or 1, int(g["day"])), said)
            return day, day
        if kind == "month_no_year":
            start, _ = _month_span(said.year, month or 1)
            start = _nearest(start, said)
            return _month_span(start.year, start.month)
        if kind == "year" and year is not None:
            return date(year, 1, 1), date(year, 12, 31)
    except ValueError:  # "31 February", "day 45": not a date
        return None
    return None


def mentioned_span(text: str, said: date) -> tuple[date, date] | None:
    """The first and last day of the dates `text` mentions (relative dates already resolved
    against `said`), or None when it mentions none."""
    spans: list[tuple[date, date]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:  # the most precise forms first; a match claims its text
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            if (span := _span(kind, m, said)) is not None:
                spans.append(span)
                taken.append((m.start(), m.end()))
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)
