"""Rules extractor: self-contained third-person facts, typed and classified (docs/architecture.md#memory-document, §4)."""
from __future__ import annotations

import re
from datetime import date, datetime, timezone

import pytest

from streams.language.rewriting import third_person
from streams.write.extraction import RulesExtractor, fit
from topics.candidates import Fact
from topics.turns import Role, Turn

TS = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself|I'm|I've|I'll|I'd)\b", re.I)


def turn(text: str, role: Role = Role.user, speaker: str | None = "Caroline") -> Turn:
    return Turn(user_id="u1", thread_id="t1", turn_id="1", role=role, speaker=speaker,
                text=text, ts=TS)


@pytest.fixture
def ex() -> RulesExtractor:
    return RulesExtractor()


def assert_well_formed(facts: list[Fact], max_facts: int = 3, max_chars: int = 280) -> None:
    assert len(facts) <= max_facts
    for f in facts:
        assert len(f.summary) <= max_chars
        assert f.summary[0].isupper(), f.summary
        assert f.summary.endswith("."), f.summary
        assert not FIRST_PERSON.search(f.summary), f.summary
        assert 1 <= f.importance <= 5
        assert f.type in {"semantic", "episodic", "procedural"}
        assert all(t == t.lower() for t in f.tags)


@pytest.mark.parametrize("text", [
    "Hi!", "Hey Mel! Good to see you! How have you been?", "ok", "thanks!", "haha", "lol",
    "What do you think?", "How was the concert? Did you like it?",
])
def test_greetings_filler_and_questions_give_nothing(ex: RulesExtractor, text: str) -> None:
    assert ex.extract(turn(text)) == []


def test_the_pet_example_is_split_into_atomic_facts(ex: RulesExtractor) -> None:
    """Issue 13 item 4: the adoption and the age are separate facts, only the age is keyed, so
    "Luna turned 4" supersedes the age and leaves the adoption."""
    facts = ex.extract(turn("I adopted a dog named Luna last year, she is 3 now."))
    assert_well_formed(facts)
    adoption, age = facts
    assert adoption.summary == "Caroline adopted a dog named Luna in 2022."  # "last year" resolved
    assert adoption.entity_key is None and "Luna" in adoption.entities
    assert (adoption.event_start, adoption.event_end) == (date(2022, 1, 1), date(2022, 12, 31))
    assert age.summary == "Caroline's dog Luna is 3 now."
    assert age.entity_key == "profile:pet:luna:age"
    assert adoption.importance >= 3 and age.importance >= 3


@pytest.mark.parametrize(("text", "atoms"), [
    ("My son Max is 7 and loves soccer.",
     [("Caroline's son Max is 7.", "profile:son:max:age"), ("Caroline's son Max loves soccer.", None)]),
    ("My dog Luna is 3 years old and has a blue collar.",
     [("Caroline's dog Luna is 3 years old.", "profile:pet:luna:age"),
      ("Caroline's dog Luna has a blue collar.", None)]),
    ("My dog Luna is 3 and a half.", [("Caroline's dog Luna is 3 and a half.", "profile:pet:luna:age")]),
])
def test_an_age_stated_first_is_its_own_fact(ex: RulesExtractor, text: str, atoms: list) -> None:
    assert [(f.summary, f.entity_key) for f in ex.extract(turn(text))] == atoms


def test_a_second_subject_after_someone_of_the_speakers_is_kept(ex: RulesExtractor) -> None:
    assert [f.summary for f in ex.extract(turn("My wife Sara is 40 and I am 42."))] == [
        "Caroline's wife Sara is 40 and Caroline is 42."]


def test_simple_pet_age_key(ex: RulesExtractor) -> None:
    facts = ex.extract(turn("My dog Luna is 3."))
    assert [f.entity_key for f in facts] == ["profile:pet:luna:age"]
    assert facts[0].summary == "Caroline's dog Luna is 3."


@pytest.mark.parametrize(("text", "key"), [
    ("I live in Lisbon and love the food here.", "profile:home:city"),
    ("We finally moved to Berlin in March, I just moved to a new flat.", "profile:home:city"),
    ("Hi, my name is Alice and I work as a nurse.", "profile:name"),
])
def test_profile_keys(ex: RulesExtractor, text: str, key: str) -> None:
    facts = ex.extract(turn(text, speaker=None))
    assert key in {f.entity_key for f in facts}
    assert_well_formed(facts)


def test_third_person_without_a_speaker_name(ex: RulesExtractor) -> None:
    facts = ex.extract(turn("I love hiking in the Alps with my brother.", speaker=None))
    assert facts and facts[0].summary == "The user loves hiking in the Alps with the user's brother."
    assert "preference" in facts[0].tags


def test_at_most_max_facts_and_chars() -> None:
    long_turn = (
        "I started a new job at Acme last month. I love my team. I run 5k every morning. "
        "My sister Ana lives in Porto. I'm planning a trip to Japan next year. "
        "I adopted a cat named Miso, she is 2. " + "I really enjoy painting landscapes " * 20 + "."
    )
    facts = RulesExtractor(max_facts=3).extract(turn(long_turn))
    assert_well_formed(facts)
    assert len(facts) == 3
    short = RulesExtractor(max_facts=2, max_chars=60).extract(turn(long_turn))
    assert_well_formed(short, max_facts=2, max_chars=60)


def test_episodic_for_past_event_with_time_anchor(ex: RulesExtractor) -> None:
    facts = ex.extract(turn("I went to a LGBTQ support group yesterday and it was so powerful."))
    assert_well_formed(facts)
    assert facts[0].type == "episodic"
    assert "7 May 2023" in facts[0].summary


def test_preferences_and_plans_are_semantic(ex: RulesExtractor) -> None:
    facts = ex.extract(turn("I prefer TypeScript and VS Code. I'm planning to learn Rust."))
    assert_well_formed(facts)
    assert [f.type for f in facts] == ["semantic", "semantic"]
    assert facts[0].summary == "Caroline prefers TypeScript and VS Code."
    assert "TypeScript" in facts[0].entities


def test_procedural(ex: RulesExtractor) -> None:
    facts = ex.extract(turn("To deploy my app, first I run the tests, then I push the tag."))
    assert facts and facts[0].type == "procedural"


def test_categories(ex: RulesExtractor) -> None:
    cases = {
        "I set a monthly budget of 400 euros for groceries.": "Budget",
        "I'm studying for my final exams at the university.": "Education",
        "My goal is to run a marathon next year.": "Goals",
        "I love my dog and my two kids.": "Personal",
    }
    for text, category in cases.items():
        facts = ex.extract(turn(text))
        assert facts and facts[0].category == category, (text, facts)


def test_statements_about_the_listener_are_dropped(ex: RulesExtractor) -> None:
    assert ex.extract(turn("You'd be a great counselor! Your empathy will really help.")) == []


def test_secrets_are_never_extracted(ex: RulesExtractor) -> None:
    assert ex.extract(turn("My password is hunter2 and I love cats.")) == []
    assert ex.extract(turn("Remember that my card is 4111 1111 1111 1111")) == []


def test_commands(ex: RulesExtractor) -> None:
    facts = ex.extract(turn("Remember that my son is allergic to peanuts."))
    assert len(facts) == 1
    assert facts[0].summary == "Caroline's son is allergic to peanuts."
    assert "explicit" in facts[0].tags and facts[0].importance >= 4
    assert ex.extract(turn("Don't remember this, I'm going to Paris tomorrow.")) == []
    assert ex.extract(turn("Forget my old address")) == []
    assert ex.extract(turn("Pin this")) == []


def test_roles(ex: RulesExtractor) -> None:
    assert ex.extract(turn("I love hiking in the Alps.", Role.tool, None)) == []
    assert ex.extract(turn("I love hiking in the Alps.", Role.system, None)) == []
    assert ex.extract(turn("Sure! Here are some hiking trails you could try.", Role.assistant, None)) == []
    facts = ex.extract(turn("We decided to go with PostgreSQL for the project.", Role.assistant, None))
    assert len(facts) == 1
    assert facts[0].summary == "The user and the assistant decided to go with PostgreSQL for the project."


def test_image_caption_is_kept_apart(ex: RulesExtractor) -> None:
    facts = ex.extract(turn("Here's a pic of my new painting! [shares an image: a photo of a "
                            "painting of a sunset over a lake]"))
    assert_well_formed(facts)
    summaries = [f.summary for f in facts]
    assert "Caroline shared a photo of a painting of a sunset over a lake." in summaries
    assert not any("shares an image" in s for s in summaries)


def test_third_person_rewrites() -> None:
    cases = {
        "I'm happy": "Ana is happy", "I've got it": "Ana has got it", "I'd love that": "Ana would love that",
        "I don't care": "Ana doesn't care", "I really love my dog": "Ana really loves Ana's dog",
        "I watch movies and I study French": "Ana watches movies and studies French",
        "My husband and I love hiking": "Ana's husband and Ana love hiking",
        "I was born in Porto": "Ana was born in Porto", "I go running": "Ana goes running",
    }
    for text, expected in cases.items():
        assert third_person(text, "Ana") == expected
    assert third_person("We went camping with our kids", "Ana", others="{name}'s husband") == (
        "Ana and Ana's husband went camping with Ana's kids")
    assert third_person("We went camping with our kids", "Ana") == "Ana went camping with Ana's kids"


def test_fit() -> None:
    assert fit("hello world!!", 280) == "Hello world."
    long = fit("word " * 100, 50)
    assert len(long) <= 50 and long.endswith(".") and " wor." not in long
