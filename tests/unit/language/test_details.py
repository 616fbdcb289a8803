"""Ordinary sentences keep their details (issue 49): the sentence splitter, "we", verbs and
initials in the third person, and the labelled sentences of tests/data/details."""
from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from benchmarks.bench_details import load_labelled, missing_details
from streams.language.companions import companions
from streams.language.rewriting import fact_summary
from streams.language.splitting import split_sentences
from streams.settings import get_settings
from streams.write.facts import FactPipeline
from topics.turns import Role, Turn

SAID = date(2024, 5, 8)


@pytest.mark.parametrize("sentence", [
    "I work as a nurse at St. Mary's hospital in Boston.",
    "My brother Dr. Adams lives in Ohio.",
    "I moved to Washington D.C. in March for a job at the U.S. Census Bureau.",
    "We're flying to Lisbon on Aug. 14 for my cousin's wedding.",
    "I love the novels of J.K. Rowling and Ursula K. Le Guin.",
    "I have a 3.8 GPA and I paid $3.50 for coffee at 5 p.m. today.",
    "I keep my recipes at www.saltandsage.com and take orders at ana.b@example.com on Sundays.",
    "Dr. Adams answered, and Mrs. Ortiz from St. Louis called.",
    "I did my Ph.D. at M.I.T. under Prof. Ramirez.",
])
def test_an_abbreviation_does_not_end_a_sentence(sentence: str) -> None:
    assert split_sentences(f"{sentence} Then I went home.") == [sentence, "Then I went home."]
    assert split_sentences(f"I went home. {sentence}") == ["I went home.", sentence]


def test_chat_breaks_lines_and_exclamations() -> None:
    assert split_sentences("I went out. It rained! did you? ok\nsee you") == [
        "I went out.", "It rained!", "did you?", "ok", "see you"]
    assert split_sentences("Great job - I loved it! - see you") == ["Great job - I loved it!", "see you"]
    assert split_sentences("  ") == []


def test_a_semicolon_joins_clauses_of_one_sentence() -> None:
    # syntok ends a sentence at "; On": a consolidated summary counted three sentences
    assert split_sentences("Ana signed up on 2 July; On 14 July Ana went; Ana made a bowl. Then home.") == [
        "Ana signed up on 2 July; On 14 July Ana went; Ana made a bowl.", "Then home."]


def test_no_text_is_lost_when_the_library_cannot_read_it() -> None:
    text = "I was at St. Mary's.\x00 Then home. And ana.b@example.com. wrote."
    assert "".join("".join(split_sentences(text)).split()) == "".join(text.split())


def _summary(sentence: str, text: str | None = None) -> str:
    return fact_summary(sentence, "Raj", SAID, assistant=False, own=True, text=text or sentence)


def test_we_is_the_speaker_unless_the_turn_names_the_others() -> None:
    assert _summary("We're flying to Lisbon on Aug. 14 for my cousin's wedding.") == (
        "Raj is flying to Lisbon on Aug. 14 for Raj's cousin's wedding.")
    assert _summary("We can accept who we are.") == "Raj can accept who Raj is."
    assert _summary("My goddaughter is staying with us.") == "Raj's goddaughter is staying with Raj."
    assert _summary("We went to the zoo.", "My wife took a day off. We went to the zoo.") == (
        "Raj and Raj's wife went to the zoo.")
    assert _summary("We went to the zoo.", "Mia and I took a day off. We went to the zoo.") == (
        "Raj and Mia went to the zoo.")
    assert _summary("We went to the zoo.", "My family and my wife came. We went to the zoo.") == (
        "Raj and Raj's family went to the zoo.")


def test_companions_are_not_taken_from_the_sentence_itself() -> None:
    assert companions("We went hiking with my family.", "We went hiking with my family.") is None
    assert companions("We went out.", "My husband cooked. We went out.") == "{name}'s husband"


def test_third_person_keeps_initialisms_and_conjugates_verbs_ending_in_ed_or_ing() -> None:
    assert _summary("I did my Ph.D. at M.I.T. and I loved it.") == (
        "Raj did Raj's Ph.D. at M.I.T. and loved it.")
    assert _summary("I sing alto and I need a new folder.") == "Raj sings alto and needs a new folder."
    assert _summary("I'm left-handed and I play the cello.") == "Raj is left-handed and plays the cello."


def test_so_joining_two_clauses_is_kept() -> None:
    assert _summary("My son is scared of big dogs, so we're getting a kitten.") == (
        "Raj's son is scared of big dogs, so Raj is getting a kitten.")
    assert _summary("I was so tired.") == "Raj was tired."  # an intensifier still goes


def test_the_labelled_sentences_keep_their_details() -> None:
    """The rules alone (trigger, extractor, write policy) on every labelled sentence: at least
    97 % keep every detail, and no summary invents "companions" (`bench details` runs the same
    through the whole write path, dedup and store included)."""
    pipeline = FactPipeline(get_settings().write)
    items = load_labelled()
    whole, summaries = 0, []
    for item in items:
        turn = Turn(user_id="u", thread_id="t", turn_id=item.id, role=Role.user,
                    speaker=item.speaker, text=item.text,
                    ts=datetime(2024, 5, 8, 12, tzinfo=timezone.utc))
        written = [f.summary for f in pipeline.facts(turn).facts]
        summaries += written
        whole += not missing_details(item.details, written)
    assert whole / len(items) >= 0.97
    assert not any("companions" in s for s in summaries)
