"""Date phrases: from a phrase to the interval of days it names, for the write and the read side.

One module for every date phrase the rules read (was three: `streams/write/extraction.py`,
`streams/write/mentioned_dates.py`, `streams/read/recall_intent.py`); `dateparser` does the
calendar arithmetic where a phrase is relative, against the day it was said (`_parse_relative`,
`time_window`).

- Write side, a fact's words: `resolve_dates` rewrites the relative phrases a turn says into
  absolute dates at the phrase's precision ("yesterday" → "on 7 May 2023", "last week" → "the
  week before 8 May 2023", "next month" → "in June 2023"), and `mentioned_span` reads the dates
  a text names — those forms and the absolute ones people write ("in March 2021", "on May 3rd",
  "back in 2019") — as one interval of days, each at its own precision (a day, a week, a month,
  a season or a year); a text naming several dates spans from the first to the last.
  `mentioned_interval` is both: the interval of days a fact's words mention. "Ana painted it in
  2022", said in 2023, happened in 2022: the memory keeps that interval (`event_start`,
  `event_end`) so a time filter ("what did Ana do in 2022") finds it, while `date_iso` /
  `created_at` keep when it was said.
- Read side, a query's words: `time_window` finds the first time phrase of a query ("what did we
  discuss last week", "in March") and gives the window of dates (`DateWindow`) the memories it
  asks about must fall in, resolved against the query's reference time and preferring the past,
  so "in March" asked in May is this year's March and asked in February is last year's.

A new relative phrase is a pattern in `_REL_DATE` and a branch of `_relative` (write side), a
pattern of `_PATTERNS` when it has a new absolute form, and an alternative of `TIME_PHRASE`
(read side); its cases go in the one table of tests/unit/language/test_dates.py.
"""
from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

from streams.language.memo import text_memo
from streams.language.signals import is_past_tense

# --- write side: relative phrases rewritten as dates (`resolve_dates`) -----------------------

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


@text_memo  # the extractor reads a sentence's dates twice: for its summary and its span
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


# --- the dates a text mentions, as an interval of days (`mentioned_span`) --------------------

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


@text_memo
def mentioned_interval(text: str, said: date) -> tuple[date, date] | None:
    """The first and last day of the dates `text` mentions, its relative dates ("last year",
    "two weeks ago") resolved against `said` (`resolve_dates`); None when it mentions none."""
    return mentioned_span(resolve_dates(text, said), said)


# --- read side: a query's time phrase as a window of dates (`time_window`) -------------------

_QUERY_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_QUERY_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_QUERY_COUNT = r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+couple\s+of|a\s+few)"
_QUERY_YEAR = r"(?:19|20)\d\d"
_QUERY_DAY = r"\d{1,2}(?:st|nd|rd|th)?"

TIME_PHRASE = re.compile(
    rf"""\b(?:
        (?:last|this|past|previous)\s+(?:week|month|year|{_QUERY_WEEKDAY})
      | yesterday | today
      | {_QUERY_COUNT}\s+(?:days?|weeks?|months?|years?)\s+ago
      | (?:on\s+)?{_QUERY_MONTH}\s+{_QUERY_DAY}(?:,?\s+{_QUERY_YEAR})?
      | (?:on\s+)?(?:the\s+)?{_QUERY_DAY}\s+(?:of\s+)?{_QUERY_MONTH}(?:,?\s+{_QUERY_YEAR})?
      | (?:in|during|since)\s+(?:early\s+|late\s+|mid[-\s])?{_QUERY_MONTH}(?:\s+{_QUERY_YEAR})?
      | (?:in|during)\s+{_QUERY_YEAR}
      | on\s+{_QUERY_WEEKDAY}
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)
_LEAD = re.compile(r"^(?:(?:on|in|during|since|the|early|late|mid)[\s-]+)+", re.IGNORECASE)

@dataclass(frozen=True)
class DateWindow:
    """Inclusive dates of the user's calendar."""

    phrase: str
    start: date
    end: date

    def contains(self, date_iso: str | None) -> bool:
        return date_iso is not None and self.start.isoformat() <= date_iso <= self.end.isoformat()


def _period_span(day: date, period: str) -> tuple[date, date]:
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
    from dateparser.date import DateDataParser  # ~1 s at import: see `_parse_relative`

    parser = DateDataParser(languages=["en"], settings={
        "RELATIVE_BASE": reference.replace(tzinfo=None), "PREFER_DATES_FROM": "past",
        "RETURN_AS_TIMEZONE_AWARE": False,
    })
    for match in TIME_PHRASE.finditer(text):
        phrase = match.group(0)
        data = parser.get_date_data(_LEAD.sub("", phrase.strip()))
        if data.date_obj is None:
            continue
        start, end = _period_span(data.date_obj.date(), data.period or "day")
        today = reference.date()
        if phrase.lower().startswith("since"):
            end = today
        elif start <= today < end:  # "this week": nothing after today has happened yet
            end = today
        return DateWindow(phrase, start, end)
    return None
