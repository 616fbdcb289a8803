"""Writing constraints of seed 001 §9: validator, normaliser, pass rate."""
from __future__ import annotations

import pytest

from streams.write.writing import (
    DANGLING_PRONOUN,
    EMPTY,
    FIRST_OR_SECOND_PERSON,
    MARKUP,
    MULTILINE,
    NO_TERMINAL_PUNCTUATION,
    NOT_CAPITALISED,
    QUESTION,
    TOO_LONG,
    TOO_MANY_SENTENCES,
    TOO_SHORT,
    normalise_summary,
    split_summary_sentences,
    trim_to,
    validate_summary,
    writing_pass_rate,
)
from topics.candidates import Fact


@pytest.mark.parametrize("summary", [
    "Caroline went to a LGBTQ support group on 7 May 2023.",
    "Melanie's dog Luna is 3. Luna loves the beach.",
    "J.K. Rowling inspires Tim. Tim takes notes on her style.",  # initials are not a sentence end
    "Dr. Li treats Ana's knee. Ana sees Dr. Li every week.",
    "It feels like all the hard work John has put in has paid off.",  # a dummy "it"
    "Tim visited the US in 2022.",  # "US" is not "us"
    "Andrew said Fox Hollow is a great trail to hike on weekends.",
    "2023 was the year Ana moved to Lisbon.",
])
def test_valid_summaries(summary: str) -> None:
    assert validate_summary(summary) == []


@pytest.mark.parametrize(("summary", "problem"), [
    ("", EMPTY), ("   ", EMPTY),
    ("Ana runs.", TOO_SHORT),
    ("Ana " + "really " * 60 + "loves running.", TOO_LONG),
    ("Ana runs. Ana swims. Ana cycles.", TOO_MANY_SENTENCES),
    ("I love hiking in the Alps.", FIRST_OR_SECOND_PERSON),
    ("Ana loves my cooking.", FIRST_OR_SECOND_PERSON),
    ("You should try the Alps.", FIRST_OR_SECOND_PERSON),
    ("Ana and us went hiking.", FIRST_OR_SECOND_PERSON),
    ("It was so powerful for Ana.", DANGLING_PRONOUN),
    ("They are Ana's best friends.", DANGLING_PRONOUN),
    ("Their support means a lot to Ana.", DANGLING_PRONOUN),
    ("ana loves hiking in the Alps.", NOT_CAPITALISED),
    ("Ana loves hiking in the Alps", NO_TERMINAL_PUNCTUATION),
    ("Does Ana love hiking?", QUESTION),
    ("Ana shared [shares an image: a dog].", MARKUP),
    ("Ana loves hiking.\nAna runs.", MULTILINE),
])
def test_violations(summary: str, problem: str) -> None:
    assert problem in validate_summary(summary)


def test_procedural_may_have_more_sentences() -> None:
    steps = "Ana runs the tests. Ana tags the release. Ana pushes the tag."
    assert TOO_MANY_SENTENCES in validate_summary(steps, "semantic")
    assert validate_summary(steps, "procedural") == []


def test_max_chars_is_a_parameter() -> None:
    assert TOO_LONG in validate_summary("Ana loves hiking in the Alps.", max_chars=20)


def test_sentence_split() -> None:
    assert split_summary_sentences("Ana runs. Ana swims! Ana cycles?") == [
        "Ana runs.", "Ana swims!", "Ana cycles?"]
    assert split_summary_sentences("J.K. Rowling writes. Mr. Li reads.") == [
        "J.K. Rowling writes.", "Mr. Li reads."]
    assert split_summary_sentences("Ana moved to the U.S. in 2020.") == ["Ana moved to the U.S. in 2020."]


def test_normalise_repairs_form() -> None:
    assert normalise_summary("  ana loves hiking!!  ") == "Ana loves hiking."
    assert normalise_summary("Ana loves hiking 🏔️ in the Alps") == "Ana loves hiking in the Alps."
    assert normalise_summary("Ana runs ,swims and cycles") == "Ana runs, swims and cycles."
    assert normalise_summary("Ana runs. Ana swims. Ana cycles.") == "Ana runs. Ana swims."
    assert normalise_summary("Ana runs. Ana swims. Ana cycles.", max_sentences=0) == (
        "Ana runs. Ana swims. Ana cycles.")
    assert normalise_summary("  ...  ") == ""


def test_normalise_trims_at_a_word_boundary() -> None:
    long = "Ana loves hiking in the Alps with her brother and " + "friends " * 50
    out = normalise_summary(long, 60)
    assert len(out) <= 60 and out.endswith(".") and not out.endswith(" .")
    assert validate_summary(out, max_chars=60) == []
    assert not out.rstrip(".").endswith(("and", "with", "the"))
    assert normalise_summary("Ana loves the Alps and", 280) == "Ana loves the Alps and."  # no cut needed


def test_trim_to_drops_dangling_joiners() -> None:
    assert trim_to("Ana went hiking with her brother and the dog", 33) == "Ana went hiking with her brother"
    assert trim_to("Ana went hiking with her brother and the dog", 32) == "Ana went hiking"
    assert trim_to("short", 280) == "short"


def test_normalised_output_passes_when_content_is_fine() -> None:
    for raw in ("ana went to Paris on 7 May 2023!", "Ana loves it - the views are great",
                "Ana runs. Ana swims. Ana cycles. Ana rows."):
        assert validate_summary(normalise_summary(raw)) == []


def test_what_normalise_cannot_repair() -> None:
    assert FIRST_OR_SECOND_PERSON in validate_summary(normalise_summary("i love hiking"))
    assert DANGLING_PRONOUN in validate_summary(normalise_summary("it was great"))


def test_writing_pass_rate() -> None:
    facts = [
        Fact(type="semantic", summary="Ana loves hiking in the Alps."),
        Fact(type="episodic", summary="Ana went to Paris on 7 May 2023."),
        Fact(type="semantic", summary="I love hiking."),
        Fact(type="procedural", summary="Ana runs the tests. Ana tags it. Ana pushes the tag."),
    ]
    assert writing_pass_rate(facts) == 0.75
    assert writing_pass_rate(["Ana loves hiking in the Alps.", "it was great"]) == 0.5
    assert writing_pass_rate([]) == 1.0
