"""Rules trigger and explicit command parsing (docs/architecture.md#write-path)."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from streams.language.sentences import is_filler, is_greeting, is_question
from streams.language.splitting import split_sentences
from streams.write.trigger import CommandKind, TriggerDecision, parse_command, rules_trigger
from topics.turns import Role, Turn

TS = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def turn(text: str, role: Role = Role.user, speaker: str | None = "Caroline") -> Turn:
    return Turn(user_id="u1", thread_id="t1", turn_id="1", role=role, speaker=speaker,
                text=text, ts=TS)


@pytest.mark.parametrize("text", [
    "Hi!", "Hey Mel!", "Hello there", "Good morning everyone",
    "Hey Mel! Good to see you! How have you been?",
])
def test_greetings_are_skipped(text: str) -> None:
    decision = rules_trigger(turn(text))
    assert decision.should_create is False
    assert decision.confidence < 0.6


@pytest.mark.parametrize("text", ["ok", "Ok!", "thanks!", "Thank you so much!", "haha", "lol",
                                  "Haha, that's so cool!", "yeah"])
def test_filler_is_skipped(text: str) -> None:
    assert is_filler(text)
    assert rules_trigger(turn(text)).should_create is False


@pytest.mark.parametrize("text", ["What do you think?", "How was your weekend?",
                                  "Do you have any pets?", "Any fun plans for the summer?"])
def test_pure_questions_are_skipped(text: str) -> None:
    assert is_question(text)
    assert rules_trigger(turn(text)).should_create is False


def test_very_short_text_is_skipped() -> None:
    assert rules_trigger(turn("Sure.")).should_create is False
    assert rules_trigger(turn("")).should_create is False


def test_personal_fact_triggers_with_high_confidence() -> None:
    decision = rules_trigger(turn("I adopted a dog named Luna last year, she is 3 now."))
    assert isinstance(decision, TriggerDecision)
    assert decision.should_create
    assert decision.confidence >= 0.6
    assert decision.type_hint in {"semantic", "episodic"}
    assert "life_event" in decision.tags_hint


def test_preference_triggers() -> None:
    decision = rules_trigger(turn("I love hiking in the mountains with my kids."))
    assert decision.should_create and decision.confidence >= 0.6
    assert "preference" in decision.tags_hint
    assert decision.type_hint == "semantic"


def test_past_event_with_time_anchor_hints_episodic() -> None:
    decision = rules_trigger(turn("I went to a LGBTQ support group yesterday."))
    assert decision.type_hint == "episodic"


def test_procedural_hint() -> None:
    decision = rules_trigger(turn("My deploy routine: first I run the tests, then I tag the release."))
    assert decision.type_hint == "procedural"


def test_mixed_turn_ignores_the_question() -> None:
    decision = rules_trigger(turn("I just moved to Lisbon! Have you ever been there?"))
    assert decision.should_create


@pytest.mark.parametrize("role", [Role.tool, Role.system])
def test_tool_and_system_turns_never_create(role: Role) -> None:
    decision = rules_trigger(turn("I love hiking and I live in Lisbon.", role=role, speaker=None))
    assert decision.should_create is False
    assert decision.confidence < 0.6


def test_assistant_only_with_a_decision_and_low_confidence() -> None:
    chat = rules_trigger(turn("Sure, here is a summary of your options.", Role.assistant, None))
    assert chat.should_create is False
    decided = rules_trigger(turn("We decided to go with PostgreSQL for the project.",
                                 Role.assistant, None))
    assert decided.should_create
    assert decided.confidence < 0.6
    assert "decision" in decided.tags_hint


@pytest.mark.parametrize(("text", "kind", "payload"), [
    ("Remember that my son is allergic to peanuts.", CommandKind.remember,
     "my son is allergic to peanuts"),
    ("please remember: I prefer window seats", CommandKind.remember, "I prefer window seats"),
    ("Can you remember that my anniversary is June 3?", CommandKind.remember,
     "my anniversary is June 3"),
    ("Don't forget that I'm vegetarian", CommandKind.remember, "I'm vegetarian"),
    ("Forget my old address please", CommandKind.forget, "my old address"),
    ("forget about the Berlin trip", CommandKind.forget, "the Berlin trip"),
    ("Don't remember this", CommandKind.dont_remember, ""),
    ("Please don't remember this, it's private.", CommandKind.dont_remember, ""),
    ("Off the record, I hate my job.", CommandKind.dont_remember, ""),
    ("Pin this", CommandKind.pin, ""),
    ("pin: I am allergic to penicillin", CommandKind.pin, "I am allergic to penicillin"),
])
def test_commands_are_parsed(text: str, kind: CommandKind, payload: str) -> None:
    cmd = parse_command(text)
    assert cmd is not None, text
    assert cmd.kind == kind
    assert cmd.payload == payload


@pytest.mark.parametrize("text", [
    "Remember when we went to the beach?", "I remember my first dog.", "Forget it, no worries.",
    "I forgot my keys again", "Delete the old file from the folder", "Pinterest is fun",
    "Remember me?", "",
])
def test_non_commands(text: str) -> None:
    assert parse_command(text) is None


def test_commands_take_the_trigger_hot_path() -> None:
    remember = rules_trigger(turn("Remember that my son is allergic to peanuts."))
    assert remember.should_create and remember.confidence == 1.0
    assert remember.command is not None and remember.command.kind == CommandKind.remember
    dont = rules_trigger(turn("Don't remember this"))
    assert dont.should_create is False
    assert dont.command is not None and dont.command.kind == CommandKind.dont_remember


def test_commands_only_from_users() -> None:
    decision = rules_trigger(turn("Remember that the meeting moved.", Role.assistant, None))
    assert decision.command is None


def test_helpers() -> None:
    assert split_sentences("I went out. It rained! Did you? ok") == [
        "I went out.", "It rained!", "Did you?", "ok"]
    assert is_greeting("Hey Mel!", ("Caroline",))
    assert not is_greeting("Hey, I moved to Lisbon last week")


@pytest.mark.parametrize("text", [
    "I adopted a dog named Luna last year, she is 3 now.", "Hey Mel! How have you been?",
    "I'm swamped with the kids & work.", "You'd be a great counselor!", "Gonna continue my edu!",
    "That's so cool!", "Life is good.", "I loved it.", "I went camping with my family last week.",
])
def test_trigger_confidence_agrees_with_the_extractor(text: str) -> None:
    from streams.write.extraction import RulesExtractor

    confident = rules_trigger(turn(text)).confidence >= 0.6
    assert confident == bool(RulesExtractor().extract(turn(text))), text


@pytest.mark.parametrize("text", [
    "Fox Hollow is a great trail to hike on weekends!", "It was Matt Patterson, he is so talented!",
    "I went to the parade last week. It made me feel accepted.", "Congrats on the new job!",
    "Thanks for being a part of this with me.", "That one is Max, my childhood dog.",
    "Take a look at this. [shares an image: a painting of a sunset over a lake]",
    "The weather is nice today.", "Same for me honestly.", "Work has been busy.",
])
def test_trigger_agrees_with_the_extractor_on_new_rules(text: str) -> None:
    from streams.write.extraction import RulesExtractor

    confident = rules_trigger(turn(text)).confidence >= 0.6
    assert confident == bool(RulesExtractor().extract(turn(text))), text


def test_a_shared_photo_alone_is_a_candidate() -> None:
    decision = rules_trigger(turn("Look! [shares an image: a photo of a cat on a sofa]"))
    assert decision.should_create and decision.confidence == 0.6
    assert decision.type_hint == "semantic" and decision.tags_hint == ("image",)
    assert rules_trigger(turn("Look! [shares an image: a cat]", Role.assistant, None)).should_create is False


def test_near_misses_report_a_lower_confidence() -> None:
    decision = rules_trigger(turn("Work has been busy."))
    assert not decision.should_create or decision.confidence < 0.6
    assert 0.0 < decision.confidence < 0.6


def test_a_contentful_turn_the_fact_rules_skip_is_kept_as_a_note() -> None:
    elliptic = rules_trigger(turn("Thanks, Mel. Still working on opening a dance studio."))
    assert elliptic.should_create and elliptic.confidence >= 0.6
    assert elliptic.tags_hint == ("note",)
    for chat in ("Wow, what a fun moment! What's the band?", "Thanks, that's so sweet of you!"):
        decision = rules_trigger(turn(chat))
        assert decision.confidence < 0.6 and "note" not in decision.tags_hint  # below the gate
