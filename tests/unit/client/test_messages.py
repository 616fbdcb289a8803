"""`add`'s messages as turns: OpenAI dicts, LangChain's message objects (the real classes, read
by duck typing) and LangChain's serialised dicts; messages without text are no turns; a
message's own id is its turn id, and without one the same call makes the same ids."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from streams.client.messages import UnsupportedMessage, turns_of
from topics.turns import Role

TS = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


def test_openai_and_langchain_shapes_become_turns_in_order():
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": [{"type": "text", "text": "I moved to Lisbon."},
                                     {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},  # no text: no turn
        HumanMessage(content="My sister is Mia.", id="h-7"),
        AIMessage(content="Nice!"),
        ToolMessage(content="weather: sunny", tool_call_id="c1"),
        SystemMessage(content="  "),
        {"type": "human", "content": "Serialised LangChain form.", "name": "Dana B."},
    ]
    turns = turns_of(messages, "dana", "t1", TS, speaker="Dana", assistant="Coach", agent_id="coach")
    assert [(t.role, t.text) for t in turns] == [
        (Role.system, "You are helpful."), (Role.user, "I moved to Lisbon."),
        (Role.user, "My sister is Mia."), (Role.assistant, "Nice!"), (Role.tool, "weather: sunny"),
        (Role.user, "Serialised LangChain form.")]
    assert [t.speaker for t in turns] == [None, "Dana", "Dana", "Coach", None, "Dana B."]
    assert turns[2].turn_id == "h-7", "a message's own id is its turn id"
    assert len({t.turn_id for t in turns}) == len(turns)
    assert all(t.user_id == "dana" and t.thread_id == "t1" and t.ts == TS and t.agent_id == "coach"
               for t in turns)
    again = turns_of(messages, "dana", "t1", TS, speaker="Dana")
    assert [t.turn_id for t in again] == [t.turn_id for t in turns], "a retried add is a replay"
    later = turns_of(messages, "dana", "t1", TS.replace(hour=11))
    assert later[0].turn_id != turns[0].turn_id, "the same words said later are a new turn"


def test_an_unknown_role_is_a_named_error():
    with pytest.raises(UnsupportedMessage, match="'narrator'"):
        turns_of([{"role": "narrator", "content": "Once upon a time"}], "dana", "t1", TS)
