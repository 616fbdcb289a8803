"""The span of the dates a fact mentions, at the precision of each date."""
from __future__ import annotations

from datetime import date

import pytest

from streams.write.extraction import resolve_dates
from streams.write.mentioned_dates import mentioned_span

SAID = date(2023, 5, 8)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("Ana painted it in 2022.", date(2022, 1, 1), date(2022, 12, 31)),
    ("Ana went hiking on 7 May 2023.", date(2023, 5, 7), date(2023, 5, 7)),
    ("Ana got married on June 3, 2019.", date(2019, 6, 3), date(2019, 6, 3)),
    ("Ana was born on 3rd of June 1990.", date(1990, 6, 3), date(1990, 6, 3)),
    ("Ana ran a race the week before 8 May 2023.", date(2023, 5, 1), date(2023, 5, 7)),
    ("Ana started the course in March 2021.", date(2021, 3, 1), date(2021, 3, 31)),
    ("Ana camped in summer 2022.", date(2022, 6, 1), date(2022, 8, 31)),
    ("Ana skied in winter 2021–22.", date(2021, 12, 1), date(2022, 2, 28)),
    ("Ana moved to Oslo in 2015 and to Rome in 2019.", date(2015, 1, 1), date(2019, 12, 31)),
    ("Ana has a dentist appointment on May 20th.", date(2023, 5, 20), date(2023, 5, 20)),  # coming
    ("Ana started pottery in December.", date(2022, 12, 1), date(2022, 12, 31)),          # past
])
def test_spans(text: str, start: date, end: date) -> None:
    assert mentioned_span(text, SAID) == (start, end)


@pytest.mark.parametrize("text", [
    "Ana saved $2023 for the trip.", "Ana has 15,000 followers.", "Ana likes jazz.",
    "Ana scored 2022.5 points.", "Ana lives at 31 February Street.",
])
def test_no_date_no_span(text: str) -> None:
    assert mentioned_span(text, SAID) is None


def test_relative_dates_are_resolved_first() -> None:
    """The extractor's resolved forms ("last year" → "in 2022") are read back."""
    assert mentioned_span(resolve_dates("I painted it last year.", SAID), SAID) == (
        date(2022, 1, 1), date(2022, 12, 31))
    assert mentioned_span(resolve_dates("We hiked last week.", SAID), SAID) == (
        date(2023, 5, 1), date(2023, 5, 7))


def test_a_merge_keeps_the_span_of_both() -> None:
    """Dedup's merge (streams.memory.documents) widens the span to cover both facts."""
    from datetime import datetime, timezone

    from streams.memory.documents import merged_memory
    from streams.memory.model import Memory
    from topics.candidates import Candidate, Fact
    from topics.turns import Turn

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
