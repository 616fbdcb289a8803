"""he/she/they resolved to the speaker's named people, keeping whose they are."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from streams.write.extraction import RulesExtractor
from topics.turns import Role, Turn


def summaries(text: str) -> list[str]:
    turn = Turn(user_id="u1", thread_id="t1", turn_id="1", role=Role.user, speaker="Andrew",
                text=text, ts=datetime(2023, 5, 8, 12, tzinfo=timezone.utc))
    return [f.summary for f in RulesExtractor().extract(turn)]


@pytest.mark.parametrize(("text", "expected"), [
    ("My sister Anna lives in Paris. She works as a chef at a bistro.",
     "Andrew's sister Anna works as a chef at a bistro."),
    ("My dog Luna is 3. She loves the long walks on the beach.",
     "Andrew's dog Luna loves the long walks on the beach."),
    ("My kids Max and Lily are growing fast. They both love soccer and swimming.",
     "Andrew's kids Max and Lily both love soccer and swimming."),
])
def test_a_pronoun_after_a_named_person_becomes_the_whole_mention(text: str, expected: str) -> None:
    assert expected in summaries(text)


def test_they_without_named_people_stays_unresolved() -> None:
    assert not any("Max" in s for s in summaries("They said the road to the lake would be closed all week."))


def test_came_over_yesterday_keeps_its_preposition() -> None:
    assert summaries("My friend Jake came over yesterday with his guitar.") == [
        "Andrew's friend Jake came over on 7 May 2023 with his guitar."]
