"""Relative dates resolved against the turn's day (docs/architecture.md#write-path), `dateparser` doing the arithmetic."""
from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from streams.write.extraction import RulesExtractor, resolve_dates
from topics.turns import Role, Turn

DAY = date(2023, 5, 8)  # a Monday


@pytest.mark.parametrize(("text", "expected"), [
    ("I went hiking last Saturday.", "I went hiking on 6 May 2023."),
    ("I ran last friday", "I ran on 5 May 2023"),
    ("This past Sunday we met", "on 7 May 2023 we met"),
    ("I will go next Friday.", "I will go on 12 May 2023."),
    ("We hike this Saturday", "We hike on 13 May 2023"),
    ("I moved two weeks ago.", "I moved around 24 April 2023."),
    ("I quit 3 days ago", "I quit on 5 May 2023"),
    ("I met him a couple of days ago", "I met him on 6 May 2023"),
    ("I started three months ago", "I started in February 2023"),
    ("I graduated 2 years ago", "I graduated in 2021"),
    ("I start my new job next month.", "I start my new job in June 2023."),
    ("I fly to Japan in two weeks", "I fly to Japan around 22 May 2023"),
    ("I'll retire in 2 years", "I'll retire in 2025"),
    ("I ran a marathon a few days ago", "I ran a marathon a few days before 8 May 2023"),
    ("Last weekend was fun", "The weekend before 8 May 2023 was fun"),
    ("We went camping last summer.", "We went camping in summer 2022."),
    ("I painted it last year", "I painted it in 2022"),
    ("We're moving next year", "We're moving in 2024"),
    ("I saw it tonight", "I saw it on 8 May 2023"),
    ("since yesterday", "since 7 May 2023"),
])
def test_relative_phrases(text: str, expected: str) -> None:
    out = resolve_dates(text, DAY)
    assert out[:1].upper() + out[1:] == expected[:1].upper() + expected[1:]


def test_a_date_as_subject_takes_no_preposition() -> None:
    assert resolve_dates("Last Sunday was awesome", date(2023, 6, 14)) == "11 June 2023 was awesome"


def test_bare_weekday_needs_the_past_tense() -> None:
    assert resolve_dates("We hiked on Saturday.", DAY) == "We hiked on 6 May 2023."
    assert resolve_dates("We're hiking on Saturday.", DAY) == "We're hiking on Saturday."


@pytest.mark.parametrize("text", [
    "Rome wasn't built in a day.",          # an idiom, not a date
    "I finished the puzzle in two weeks.",  # a duration in the past
    "in the last year", "the last week",
])
def test_durations_and_idioms_are_left_alone(text: str) -> None:
    assert resolve_dates(text, DAY) == text


def test_winter_across_the_new_year() -> None:
    assert resolve_dates("last winter", date(2024, 1, 15)) == "in winter 2022–23"
    assert resolve_dates("last winter", date(2024, 4, 15)) == "in winter 2023–24"
    assert resolve_dates("last autumn", date(2023, 12, 5)) == "in autumn 2023"
    assert resolve_dates("last autumn", date(2023, 11, 30)) == "in autumn 2022"  # still autumn
    assert resolve_dates("last spring", date(2023, 5, 8)) == "in spring 2022"


def test_turn_time_zone_decides_the_day() -> None:
    ts = datetime(2023, 5, 8, 2, 0, tzinfo=timezone.utc)  # still 7 May in New York
    turn = Turn(user_id="u", thread_id="t", turn_id="1", role=Role.user, speaker="Ana",
                text="I went to the Louvre yesterday.", ts=ts, timezone="America/New_York")
    facts = RulesExtractor().extract(turn)
    assert facts and "6 May 2023" in facts[0].summary
