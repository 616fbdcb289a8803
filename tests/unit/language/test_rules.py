"""Rules extractor: statements without first person, photos, pronouns, importance, writing."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from streams.language.rewriting import third_person
from streams.write.extraction import RulesExtractor
from streams.language.fact_sentences import fact_sentences, is_expletive_it
from streams.language.sentences import clean_sentence
from streams.language.signals import sentence_signals
from streams.write.writing import validate_summary
from topics.turns import Role, Turn

TS = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def turn(text: str, speaker: str | None = "Andrew", role: Role = Role.user) -> Turn:
    return Turn(user_id="u1", thread_id="t1", turn_id="1", role=role, speaker=speaker,
                text=text, ts=TS)


def summaries(text: str, **kw: object) -> list[str]:
    return [f.summary for f in RulesExtractor().extract(turn(text, **kw))]  # type: ignore[arg-type]


def test_statements_without_first_person_are_attributed() -> None:
    assert summaries("Fox Hollow is a great trail to hike on weekends; the views are awesome!") == [
        "Andrew said Fox Hollow is a great trail to hike on weekends; the views are awesome."]
    assert summaries("Edinburgh, Scotland would be great for a magical vibe.") == [
        "Andrew said Edinburgh, Scotland would be great for a magical vibe."]
    assert summaries("The Wolves are solid and LeBron's skills are amazing.") == [
        "Andrew said the Wolves are solid and LeBron's skills are amazing."]
    assert summaries("The weather is nice today.") == []  # too little to stand alone


def test_answers_that_need_the_question_are_kept_as_what_was_said() -> None:
    # No fact about the speaker (the sentence opens on a pronoun), but what was said is kept
    # as a note, tagged so: a later question names what the answer names.
    assert summaries("It was Matt Patterson, he is so talented!") == [
        "Andrew said it was Matt Patterson, he is talented."]
    assert summaries("Thanks! They're called Peruvian Lilies.") == [
        "Andrew said they're called Peruvian Lilies."]
    assert "note" in RulesExtractor().extract(turn("They're called Peruvian Lilies."))[0].tags
    assert summaries("Yes, they were scared but fine.") == []  # too little content for a note


def test_elliptic_statements_are_kept_as_notes() -> None:
    assert summaries("Thanks, Gina. Still working on opening a dance studio.") == [
        "Andrew said still working on opening a dance studio."]
    assert summaries("Wow, what got you into running?") == []  # a question is never a note
    # A turn that made a fact gets no note besides it.
    assert summaries("I adopted a dog last week. Their names are Pepper and Panda.") == [
        "Andrew adopted a dog the week before 8 May 2023."]


def test_dangling_pronoun_sentences_are_not_written() -> None:
    out = summaries("I went to the pride parade last week. It made me feel so accepted.")
    assert out == ["Andrew went to the pride parade the week before 8 May 2023."]
    assert all(not s.startswith(("It ", "They ", "Their ")) for s in out)


def test_dummy_it_is_self_contained() -> None:
    assert is_expletive_it("It feels like all the hard work paid off.")
    assert is_expletive_it("It's been a while since I went hiking.")
    assert not is_expletive_it("It was great.")
    out = summaries("It feels like all the hard work I've put in has paid off now that I'm an "
                    "assistant manager.")
    assert out == ["It feels like all the hard work Andrew has put in has paid off now that "
                   "Andrew is an assistant manager."]


def test_demonstratives_and_naming() -> None:
    assert clean_sentence("These figurines I bought remind me of family.") == (
        "The figurines I bought remind me of family.")
    assert clean_sentence("This means a lot.") == "This means a lot."
    assert clean_sentence("Those look great") == "Those look great"
    assert summaries("Thanks! That one is Max, my childhood dog.", speaker="Audrey") == [
        "Max is Audrey's childhood dog."]


def test_photos() -> None:
    out = summaries("Here's Toby at his favorite spot. [shares an image: a photo of a dog "
                    "laying on a fluffy blanket]")
    assert "Andrew shared a photo of Toby at his favorite spot." in out
    assert "Andrew shared a photo of a dog laying on a fluffy blanket." in out
    # A photo alone is a fact too; "a photography of" reads as "a photo of".
    assert summaries("Look! [shares an image: a photography of a car on a flatbed]") == [
        "Andrew shared a photo of a car on a flatbed."]
    assert summaries("Take a look at this. [shares an image: a painting of a sunset]") == [
        "Andrew shared a photo of a painting of a sunset."]


def test_chat_cleanup() -> None:
    assert clean_sentence("Haven't talked in a while, wanted to let you know I joined a club.") == (
        "I joined a club.")
    assert clean_sentence("Gotta take Toby out for a hike.") == "I've got to take Toby out for a hike."
    assert clean_sentence("Cool, gonna give it a try.") == "I'm going to give it a try."
    assert clean_sentence("Been a busy week since we talked.") == "It's been a busy week since we talked."
    assert clean_sentence("It was great, you know, really fun") == "It was great, really fun"
    for reaction in ("Thanks for being a part of this with me, John.", "Congrats on the new job!",
                     "I'm so sorry to hear about Max.", "Love that purple color!"):
        assert summaries(reaction) == [], reaction


def test_neutral_tone() -> None:
    assert summaries("I'm really super excited about my new job at Acme!") == [
        "Andrew is excited about Andrew's new job at Acme."]
    assert third_person("I typically hold it for 30 seconds", "John") == (
        "John typically holds it for 30 seconds")


def test_importance_levels_spread_over_one_to_five() -> None:
    """Seed 000 §3: what the fact is about, its trust and its sentiment's intensity; pin is 5."""
    def importance(text: str) -> int:
        facts = RulesExtractor().extract(turn(text))
        assert len(facts) == 1, facts
        return facts[0].importance

    assert importance("My grandma passed away last week and I am heartbroken.") == 5  # big, intense
    assert importance("I got married last summer, best day of my life!") == 5
    assert importance("Pin this: my passport expires in June 2027.") == 5            # pinned
    assert importance("I adopted a dog named Luna from the shelter.") == 4          # big event
    assert importance("I went to a LGBTQ support group yesterday.") == 3           # named, dated
    assert importance("Max is my childhood dog.") == 3                               # identity
    assert importance("I love the way the evening light falls across the quiet lake.") == 3  # felt
    assert importance("I finished building the big wooden bookshelf for the kids' new bedroom.") == 2
    assert importance("I'm going to keep it up.") == 1                               # vague
    assert importance("I went to the store again.") == 2                  # short, but about something
    assert importance("I'm really proud of what we did together.") == 1       # small talk


def test_intensity_moves_importance() -> None:
    calm = RulesExtractor().extract(turn("I walked along the river with my neighbour after work."))
    moved = RulesExtractor().extract(turn("I walked along the river with my neighbour after work, "
                                          "it was wonderful and so beautiful!"))
    assert calm[0].valence == "neutral" and moved[0].valence == "positive"
    assert moved[0].intensity > 0.5 and moved[0].importance > calm[0].importance


def test_every_fact_meets_the_writing_constraints() -> None:
    texts = [
        "Hey Mel! I went to a LGBTQ support group yesterday and it was so powerful!!! 🌈",
        "Gonna continue my edu and check out career options, which is pretty exciting!",
        "My kids are so excited about summer break! We're thinking about going camping next month.",
        "J.K. Rowling is such an inspiring writer. I'm always taking notes on her style.",
        "I " + "really " * 80 + "love hiking in the Alps with my brother and my dog.",
    ]
    ex = RulesExtractor()
    for text in texts:
        for fact in ex.extract(turn(text)):
            assert validate_summary(fact.summary, fact.type) == [], fact.summary
    assert ex.stats["drafted"] == ex.stats["first_pass"] + ex.stats["repaired"] + ex.stats["rejected"]
    assert ex.stats["rejected"] == 0


@pytest.mark.parametrize(("sentence", "entities"), [
    ("J.K. Rowling is such an inspiring writer.", ("J.K. Rowling",)),
    ("Harry Potter and Game of Thrones are amazing.", ("Harry Potter", "Game of Thrones")),
    ("I'm doing OK, thanks.", ()),
])
def test_entities(sentence: str, entities: tuple[str, ...]) -> None:
    assert sentence_signals(sentence).entities == entities


def test_fact_sentences_picks_the_best_in_turn_order() -> None:
    sentences = ["Hi!", "I love my dog Luna.", "It was great.", "I went to Paris yesterday.",
                 "What about you?", "I run 5k every morning."]
    picked = fact_sentences(sentences, Role.user, ("Ana",), max_facts=2)
    assert [p.index for p in picked] == sorted(p.index for p in picked)
    assert len(picked) == 2 and all(p.own for p in picked)
    assert 2 not in {p.index for p in picked} and 4 not in {p.index for p in picked}


@pytest.mark.parametrize(("text", "key"), [
    ("I work as a nurse at the city clinic.", "profile:job:title"),
    ("I'm originally from Sweden.", "profile:origin"),
    ("I'm married now.", "profile:relationship"),
    ("My sister's name is Ana.", "profile:family:sister:name"),
    ("I have a daughter named Mia.", "profile:family:daughter:name"),
])
def test_more_profile_keys(text: str, key: str) -> None:
    facts = RulesExtractor().extract(turn(text))
    assert [f.entity_key for f in facts] == [key]
    assert facts[0].type == "semantic" and facts[0].importance >= 3


def test_a_name_in_passing_is_not_a_key() -> None:
    # Keys mark the attribute a fact is about: "Sam loves Lego" must not supersede "Sam got a bike".
    facts = RulesExtractor().extract(turn("My son Sam loves building Lego castles."))
    assert facts and facts[0].entity_key is None


def test_reactions_versus_wishes() -> None:
    assert summaries("Love to hear more about it!") == []
    assert summaries("I'd love to see your photos!") == []
    assert summaries("I'd love to see the Northern Lights in Norway someday.") == [
        "Andrew would love to see the Northern Lights in Norway someday."]
    assert summaries("Just checking out some exciting new trails near the lake.") == [
        "Andrew is checking out some exciting new trails near the lake."]
    assert third_person("I didn't do too great, even though I tried", "Nate") == (
        "Nate didn't do too great, even though Nate tried")
