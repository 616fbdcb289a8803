"""Taking back what was just said: "don't remember this" and its everyday forms are explicit
commands (`streams.write.trigger.parse_command`), however the user opens them."""
from __future__ import annotations

import pytest

from streams.write.trigger import CommandKind, parse_command


@pytest.mark.parametrize("text", [
    "Actually, don't remember this.",
    "actually don't store that please",
    "Wait, don't save that.",
    "Hmm, actually, don't remember that.",
    "On second thought, don't remember this.",
    "Oops, please don't remember this.",
    "Forget that.",
    "Actually, forget that.",
    "Oh wait, forget that!",
    "Please forget what I just said.",
])
def test_a_change_of_mind_takes_back_the_turn_before(text: str) -> None:
    cmd = parse_command(text)
    assert cmd is not None and cmd.kind == CommandKind.dont_remember, text
    assert cmd.payload == ""


@pytest.mark.parametrize(("text", "kind", "payload"), [
    ("Actually, remember that I am vegetarian.", CommandKind.remember, "I am vegetarian"),
    ("Actually, forget my old address.", CommandKind.forget, "my old address"),
    ("Sorry, pin this", CommandKind.pin, ""),
])
def test_other_commands_open_the_same_way(text: str, kind: CommandKind, payload: str) -> None:
    cmd = parse_command(text)
    assert cmd is not None and (cmd.kind, cmd.payload) == (kind, payload)


@pytest.mark.parametrize("text", [
    "Actually, I moved to Porto.",        # a fact, not a command
    "Forget it, no worries.",             # a dismissal
    "Delete that",                        # may be about a file or a message: not a memory command
    "Actually, delete the old file from the folder",
    "Wait, remember when we went to the beach?",
])
def test_not_commands(text: str) -> None:
    assert parse_command(text) is None


def test_a_take_back_is_a_valid_hot_path_command() -> None:
    """A bare "forget that" used to become a `forget` with nothing to search for, which the
    Command schema refuses (the turn was dead-lettered)."""
    from datetime import datetime, timezone

    from streams.write.facts import hot_command
    from topics.turns import Turn

    turn = Turn(user_id="u", thread_id="t", turn_id="2", role="user", text="Forget that.",  # type: ignore[arg-type]
                ts=datetime(2024, 5, 1, tzinfo=timezone.utc))
    command = hot_command(turn, parse_command(turn.text))  # type: ignore[arg-type]
    assert command.kind == "dont_remember" and command.query is None
