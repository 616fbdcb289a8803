import pytest

from streams.write.facts import FactPipeline
from streams.language.sensitive import KINDS, sensitive_categories
from streams.settings import WriteSettings
from topics.turns import Turn

ALL = list(KINDS)


@pytest.mark.parametrize("text,kind", [
    ("Ana was diagnosed with diabetes last spring.", "health"),
    ("Ana is taking antidepressants again.", "health"),
    ("Ana is a devout Catholic.", "religion"),
    ("Ana voted for the Greens in the last election.", "politics"),
    ("Ana is a registered Democrat.", "politics"),
    ("Ana lives at 221B Baker Street.", "address"),
    ("Ana's flat is on Rua Augusta 12, near the river.", "address"),
])
def test_sensitive_statements_are_recognised(text, kind):
    assert sensitive_categories(text, ALL) == [kind]


@pytest.mark.parametrize("text", [
    "Ana went to a yoga class to relax.",
    "Ana and Bo talked about the election results.",
    "Ana visited a beautiful church in Lisbon.",
    "Ana lives in Lisbon near the river.",
    "Ana ran 5 km in 25 minutes.",
])
def test_ordinary_statements_are_not(text):
    assert sensitive_categories(text, ALL) == []


def turn(text: str) -> Turn:
    return Turn(user_id="u", thread_id="t", turn_id="1", role="user", speaker="Ana", text=text,
                ts="2024-05-01T10:00:00+00:00")  # type: ignore[arg-type]


def test_sensitive_facts_are_stored_only_when_explicitly_asked():
    pipeline = FactPipeline(WriteSettings())
    said = pipeline.facts(turn("I was diagnosed with diabetes last spring and I hate needles."))
    assert not any("diabetes" in f.summary for f in said.facts)
    assert "sensitive_health" in said.blocked
    asked = pipeline.facts(turn("Remember that I was diagnosed with diabetes last spring."))
    assert any("diabetes" in f.summary for f in asked.facts)
