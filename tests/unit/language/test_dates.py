"""Date phrases, one table for both sides (streams/language/dates.py).

Each row is a phrase said (or asked) on a day, and what each side makes of it: the write side's
rewrite (`resolve_dates`: the relative phrase as an absolute date, at its precision), the
interval of days the write side stores for it (`mentioned_interval`: `event_start`,
`event_end`), and the window the read side gives a query holding it (`time_window`, asked at
noon UTC that day; None when it names no time it reads). The two sides read different things —
a fact's tense and wording, a query's time phrase — so a row may differ between them ("two weeks
ago": around one day written, the whole week asked). Was three near-identical tables
(tests/unit/write/test_extraction_dates.py, test_mentioned_dates.py, tests/unit/read/test_query_time.py).
"""
from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from streams.language.dates import mentioned_interval, mentioned_span, resolve_dates, time_window
from streams.write.extraction import RulesExtractor
from topics.turns import Role, Turn

DAY = date(2023, 5, 8)  # a Monday
ASKED = date(2024, 5, 15)  # a Wednesday

Interval = tuple[date, date] | None
PHRASES: list[tuple[str, date, str, Interval, Interval]] = [
    # (text, said, written, interval, window)
    ('I went hiking last Saturday.', DAY,
     'I went hiking on 6 May 2023.', (date(2023, 5, 6), date(2023, 5, 6)), (date(2023, 5, 6), date(2023, 5, 6))),
    ('I ran last friday', DAY,
     'I ran on 5 May 2023', (date(2023, 5, 5), date(2023, 5, 5)), (date(2023, 5, 5), date(2023, 5, 5))),
    ('This past Sunday we met', DAY,
     'on 7 May 2023 we met', (date(2023, 5, 7), date(2023, 5, 7)), None),
    ('I will go next Friday.', DAY,
     'I will go on 12 May 2023.', (date(2023, 5, 12), date(2023, 5, 12)), None),
    ('We hike this Saturday', DAY,
     'We hike on 13 May 2023', (date(2023, 5, 13), date(2023, 5, 13)), (date(2023, 5, 13), date(2023, 5, 13))),
    ('I moved two weeks ago.', DAY,
     'I moved around 24 April 2023.', (date(2023, 4, 24), date(2023, 4, 24)), (date(2023, 4, 24), date(2023, 4, 30))),
    ('I quit 3 days ago', DAY,
     'I quit on 5 May 2023', (date(2023, 5, 5), date(2023, 5, 5)), (date(2023, 5, 5), date(2023, 5, 5))),
    ('I met him a couple of days ago', DAY,
     'I met him on 6 May 2023', (date(2023, 5, 6), date(2023, 5, 6)), None),
    ('I started three months ago', DAY,
     'I started in February 2023', (date(2023, 2, 1), date(2023, 2, 28)), (date(2023, 2, 1), date(2023, 2, 28))),
    ('I graduated 2 years ago', DAY,
     'I graduated in 2021', (date(2021, 1, 1), date(2021, 12, 31)), (date(2021, 1, 1), date(2021, 12, 31))),
    ('I start my new job next month.', DAY,
     'I start my new job in June 2023.', (date(2023, 6, 1), date(2023, 6, 30)), None),
    ('I fly to Japan in two weeks', DAY,
     'I fly to Japan around 22 May 2023', (date(2023, 5, 22), date(2023, 5, 22)), None),
    ("I'll retire in 2 years", DAY,
     "I'll retire in 2025", (date(2025, 1, 1), date(2025, 12, 31)), None),
    ('I ran a marathon a few days ago', DAY,
     'I ran a marathon a few days before 8 May 2023', (date(2023, 5, 3), date(2023, 5, 8)), None),
    ('Last weekend was fun', DAY,
     'the weekend before 8 May 2023 was fun', (date(2023, 5, 1), date(2023, 5, 7)), None),
    ('We went camping last summer.', DAY,
     'We went camping in summer 2022.', (date(2022, 6, 1), date(2022, 8, 31)), None),
    ('I painted it last year', DAY,
     'I painted it in 2022', (date(2022, 1, 1), date(2022, 12, 31)), (date(2022, 1, 1), date(2022, 12, 31))),
    ("We're moving next year", DAY,
     "We're moving in 2024", (date(2024, 1, 1), date(2024, 12, 31)), None),
    ('I saw it tonight', DAY,
     'I saw it on 8 May 2023', (date(2023, 5, 8), date(2023, 5, 8)), None),
    ('since yesterday', DAY,
     'since 7 May 2023', (date(2023, 5, 7), date(2023, 5, 7)), (date(2023, 5, 7), date(2023, 5, 7))),
    ('I went there yesterday.', DAY,
     'I went there on 7 May 2023.', (date(2023, 5, 7), date(2023, 5, 7)), (date(2023, 5, 7), date(2023, 5, 7))),
    ('I moved last month', DAY,
     'I moved in April 2023', (date(2023, 4, 1), date(2023, 4, 30)), (date(2023, 4, 1), date(2023, 4, 30))),
    ('last Friday I ran', DAY,
     'on 5 May 2023 I ran', (date(2023, 5, 5), date(2023, 5, 5)), (date(2023, 5, 5), date(2023, 5, 5))),
    ('We met last week', DAY,
     'We met the week before 8 May 2023', (date(2023, 5, 1), date(2023, 5, 7)), (date(2023, 5, 1), date(2023, 5, 7))),
    ('I quit 2 years ago', DAY,
     'I quit in 2021', (date(2021, 1, 1), date(2021, 12, 31)), (date(2021, 1, 1), date(2021, 12, 31))),
    ('We hiked on Saturday.', DAY,
     'We hiked on 6 May 2023.', (date(2023, 5, 6), date(2023, 5, 6)), (date(2023, 5, 6), date(2023, 5, 6))),
    ("We're hiking on Saturday.", DAY,
     "We're hiking on Saturday.", None, (date(2023, 5, 6), date(2023, 5, 6))),
    ("Rome wasn't built in a day.", DAY,
     "Rome wasn't built in a day.", None, None),
    ('I finished the puzzle in two weeks.', DAY,
     'I finished the puzzle in two weeks.', None, None),
    ('in the last year', DAY,
     'in the last year', None, (date(2022, 1, 1), date(2022, 12, 31))),
    ('the last week', DAY,
     'the last week', None, (date(2023, 5, 1), date(2023, 5, 7))),
    ('Ana painted it in 2022.', DAY,
     'Ana painted it in 2022.', (date(2022, 1, 1), date(2022, 12, 31)), (date(2022, 1, 1), date(2022, 12, 31))),
    ('Ana went hiking on 7 May 2023.', DAY,
     'Ana went hiking on 7 May 2023.', (date(2023, 5, 7), date(2023, 5, 7)), (date(2023, 5, 7), date(2023, 5, 7))),
    ('Ana got married on June 3, 2019.', DAY,
     'Ana got married on June 3, 2019.', (date(2019, 6, 3), date(2019, 6, 3)), (date(2019, 6, 3), date(2019, 6, 3))),
    ('Ana was born on 3rd of June 1990.', DAY,
     'Ana was born on 3rd of June 1990.', (date(1990, 6, 3), date(1990, 6, 3)), (date(1990, 6, 3), date(1990, 6, 3))),
    ('Ana ran a race the week before 8 May 2023.', DAY,
     'Ana ran a race the week before 8 May 2023.', (date(2023, 5, 1), date(2023, 5, 7)), (date(2023, 5, 8), date(2023, 5, 8))),
    ('Ana started the course in March 2021.', DAY,
     'Ana started the course in March 2021.', (date(2021, 3, 1), date(2021, 3, 31)), (date(2021, 3, 1), date(2021, 3, 31))),
    ('Ana camped in summer 2022.', DAY,
     'Ana camped in summer 2022.', (date(2022, 6, 1), date(2022, 8, 31)), None),
    ('Ana skied in winter 2021–22.', DAY,
     'Ana skied in winter 2021–22.', (date(2021, 12, 1), date(2022, 2, 28)), None),
    ('Ana moved to Oslo in 2015 and to Rome in 2019.', DAY,
     'Ana moved to Oslo in 2015 and to Rome in 2019.', (date(2015, 1, 1), date(2019, 12, 31)), (date(2015, 1, 1), date(2015, 12, 31))),
    ('Ana has a dentist appointment on May 20th.', DAY,
     'Ana has a dentist appointment on May 20th.', (date(2023, 5, 20), date(2023, 5, 20)), (date(2022, 5, 20), date(2022, 5, 20))),
    ('Ana started pottery in December.', DAY,
     'Ana started pottery in December.', (date(2022, 12, 1), date(2022, 12, 31)), (date(2022, 12, 1), date(2022, 12, 31))),
    ('Ana saved $2023 for the trip.', DAY,
     'Ana saved $2023 for the trip.', None, None),
    ('Ana has 15,000 followers.', DAY,
     'Ana has 15,000 followers.', None, None),
    ('Ana likes jazz.', DAY,
     'Ana likes jazz.', None, None),
    ('Ana scored 2022.5 points.', DAY,
     'Ana scored 2022.5 points.', None, None),
    ('Ana lives at 31 February Street.', DAY,
     'Ana lives at 31 February Street.', None, None),
    ('I painted it last year.', DAY,
     'I painted it in 2022.', (date(2022, 1, 1), date(2022, 12, 31)), (date(2022, 1, 1), date(2022, 12, 31))),
    ('We hiked last week.', DAY,
     'We hiked the week before 8 May 2023.', (date(2023, 5, 1), date(2023, 5, 7)), (date(2023, 5, 1), date(2023, 5, 7))),
    ('Last Sunday was awesome', date(2023, 6, 14),
     '11 June 2023 was awesome', (date(2023, 6, 11), date(2023, 6, 11)), (date(2023, 6, 11), date(2023, 6, 11))),
    ('last winter', date(2024, 1, 15),
     'in winter 2022–23', (date(2022, 12, 1), date(2023, 2, 28)), None),
    ('last winter', date(2024, 4, 15),
     'in winter 2023–24', (date(2023, 12, 1), date(2024, 2, 29)), None),
    ('last autumn', date(2023, 12, 5),
     'in autumn 2023', (date(2023, 9, 1), date(2023, 11, 30)), None),
    ('last autumn', date(2023, 11, 30),
     'in autumn 2022', (date(2022, 9, 1), date(2022, 11, 30)), None),
    ('last spring', DAY,
     'in spring 2022', (date(2022, 3, 1), date(2022, 5, 31)), None),
    ('What did we discuss last week?', ASKED,
     'What did we discuss the week before 15 May 2024?', (date(2024, 5, 6), date(2024, 5, 12)), (date(2024, 5, 6), date(2024, 5, 12))),
    ('what did I do in March', ASKED,
     'what did I do in March', (date(2024, 3, 1), date(2024, 3, 31)), (date(2024, 3, 1), date(2024, 3, 31))),
    ('what did we decide in early April 2023', ASKED,
     'what did we decide in early April 2023', (date(2023, 4, 1), date(2023, 4, 30)), (date(2023, 4, 1), date(2023, 4, 30))),
    ('the chat yesterday', ASKED,
     'the chat on 14 May 2024', (date(2024, 5, 14), date(2024, 5, 14)), (date(2024, 5, 14), date(2024, 5, 14))),
    ('what happened on May 3', ASKED,
     'what happened on May 3', (date(2024, 5, 3), date(2024, 5, 3)), (date(2024, 5, 3), date(2024, 5, 3))),
    ('two weeks ago we talked about dogs', ASKED,
     'around 1 May 2024 we talked about dogs', (date(2024, 5, 1), date(2024, 5, 1)), (date(2024, 4, 29), date(2024, 5, 5))),
    ('where was I in 2023', ASKED,
     'where was I in 2023', (date(2023, 1, 1), date(2023, 12, 31)), (date(2023, 1, 1), date(2023, 12, 31))),
    ('this week so far', ASKED,
     'the week of 15 May 2024 so far', (date(2024, 5, 13), date(2024, 5, 19)), (date(2024, 5, 13), date(2024, 5, 15))),
    ('anything since March', ASKED,
     'anything since March', (date(2024, 3, 1), date(2024, 3, 31)), (date(2024, 3, 1), date(2024, 5, 15))),
    ('during June', ASKED,
     'during June', (date(2024, 6, 1), date(2024, 6, 30)), (date(2023, 6, 1), date(2023, 6, 30))),
    ('What pet does Ana have?', ASKED,
     'What pet does Ana have?', None, None),
    ("May I ask my dog's name?", ASKED,
     "May I ask my dog's name?", None, None),
    ('Ana likes the Marches of Italy', ASKED,
     'Ana likes the Marches of Italy', None, None),
]


@pytest.mark.parametrize(("text", "said", "written", "interval", "window"), PHRASES)
def test_a_phrase_becomes_dates_on_both_sides(text: str, said: date, written: str, interval: Interval,
                                              window: Interval) -> None:
    assert resolve_dates(text, said) == written
    assert mentioned_interval(text, said) == interval == mentioned_span(written, said)
    asked = time_window(text, datetime(said.year, said.month, said.day, 12, tzinfo=timezone.utc))
    assert (asked and (asked.start, asked.end)) == window
    if asked is not None:
        assert asked.phrase in text and asked.contains(asked.start.isoformat())
        assert not asked.contains(None)


def test_the_turn_time_zone_decides_the_day() -> None:
    ts = datetime(2023, 5, 8, 2, 0, tzinfo=timezone.utc)  # still 7 May in New York
    turn = Turn(user_id="u", thread_id="t", turn_id="1", role=Role.user, speaker="Ana",
                text="I went to the Louvre yesterday.", ts=ts, timezone="America/New_York")
    facts = RulesExtractor().extract(turn)
    assert facts and "6 May 2023" in facts[0].summary


def test_a_merge_keeps_the_span_of_both() -> None:
    """Dedup's merge (streams.memory.documents) widens the span to cover both facts."""
    from streams.memory.documents import merged_memory
    from streams.memory.model import Memory
    from topics.candidates import Candidate, Fact

    ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
    target = Memory(id="m1", user_id="u1", type="episodic", summary="Ana painted a lake in 2022.",
                    created_at=ts, updated_at=ts, last_accessed=ts,
                    event_start=date(2022, 1, 1), event_end=date(2022, 12, 31))
    fact = Fact(type="episodic", summary="Ana painted a lake in March 2023.",
                event_start=date(2023, 3, 1), event_end=date(2023, 3, 31))
    turn = Turn(user_id="u1", thread_id="t1", turn_id="2", role="user", text="x", ts=ts)  # type: ignore[arg-type]
    merged = merged_memory(target, Candidate(turn=turn, fact=fact, fact_index=0, fact_count=1,
                                             confidence=0.9))
    assert (merged.event_start, merged.event_end) == (date(2022, 1, 1), date(2023, 3, 31))
    undated = Fact(type="episodic", summary="Ana painted a lake.")
    assert merged_memory(target, Candidate(turn=turn, fact=undated, fact_index=0, fact_count=1,
                                           confidence=0.9)).event_end == date(2022, 12, 31)
