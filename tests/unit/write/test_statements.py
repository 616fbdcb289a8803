"""Which profile fields a user states in the first person (`streams.write.statements`): the
user's own words are their consent to a change of a sensitive field (seed 001 §10)."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from streams.write.statements import first_person_keys
from topics.turns import Turn

TS = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


def turn(text: str, role: str = "user", source: str = "chat") -> Turn:
    return Turn(user_id="u", thread_id="t", turn_id="1", role=role, speaker="Ana", text=text,  # type: ignore[arg-type]
                ts=TS, source=source)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "key"), [
    ("I moved to Lisbon.", "profile:home:city"),
    ("I moved to Berlin last month.", "profile:home:city"),
    ("Call me Sam.", "profile:name"),
    ("Please call me Annie from now on.", "profile:name"),
    ("My pronouns are they/them now.", "profile:pronouns"),
    ("I prefer to speak Spanish now.", "profile:language"),
    ("Remember that I moved to Porto.", "profile:home:city"),
    ("I moved to Lisbon, my friend says it is lovely.", "profile:home:city"),
    ("My sister lives in Porto and I moved to Lisbon.", "profile:home:city"),
])
def test_the_users_own_words_state_the_field(text: str, key: str) -> None:
    assert first_person_keys(turn(text)) == [key]


@pytest.mark.parametrize("text", [
    "My friend says I live in Berlin now.",      # someone else's words
    "My friends say I live in Berlin now.",
    "Apparently I live in Berlin now.",
    "I think I moved to Berlin for good.",       # a hedge
    "I guess I live in Berlin now.",
    "Maybe I moved to Berlin for good.",
    "If I moved to Berlin, would you know?",     # a condition, a question
    "Did I tell you I moved to Berlin?",
    "Loving my new flat in Lisbon!",             # a model may infer the city; no words state it
])
def test_reported_hedged_or_inferred_values_are_not_the_users_statement(text: str) -> None:
    assert first_person_keys(turn(text)) == []


def test_only_the_user_in_chat_states_their_own_profile() -> None:
    assert first_person_keys(turn("I see you've moved to Berlin.", role="assistant")) == []
    assert first_person_keys(turn("I moved to Berlin.", role="assistant")) == []
    assert first_person_keys(turn("I moved to Berlin.", source="external")) == []
