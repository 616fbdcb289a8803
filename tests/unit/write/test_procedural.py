"""Procedural memory (seed 001 §12): explicit trigger or high-confidence steps, numbered
imperative steps, category Procedural, returned only when a query asks for it."""
from __future__ import annotations

import pytest

from streams.settings import WriteSettings
from streams.write.facts import FactPipeline
from streams.write.procedural import detect, procedure_fact, settle
from tests.unit.read.test_query_execute import ask, ids, index_of, mem
from topics.candidates import Fact
from topics.turns import Turn


def turn(text: str, role: str = "user") -> Turn:
    return Turn(user_id="u", thread_id="t1", turn_id="1", role=role, speaker="Ana", text=text,  # type: ignore[arg-type]
                ts="2024-05-01T10:00:00+00:00")  # type: ignore[arg-type]


@pytest.mark.parametrize("text, summary", [
    ("Remember how to reset my router: unplug it, wait 30 seconds, plug it back in.",
     "How to reset Ana's router: 1. Unplug it. 2. Wait 30 seconds. 3. Plug it back in."),
    ("The steps are: 1. Run the tests. 2. Tag the release. 3. Push the tag.",
     "Steps: 1. Run the tests. 2. Tag the release. 3. Push the tag."),
    ("To deploy my app, first I run the tests, then I push the tag.",
     "How to deploy Ana's app: 1. Run the tests. 2. Push the tag."),
    ("Here's how I make cold brew: grind the beans coarse; steep them for 12 hours; strain them.",
     "How to make cold brew: 1. Grind the beans coarse. 2. Steep them for 12 hours. 3. Strain them."),
    ("1. Preheat the oven 2. Mix the batter 3. Bake for 20 minutes",
     "Steps: 1. Preheat the oven. 2. Mix the batter. 3. Bake for 20 minutes."),
])
def test_explicit_or_confident_steps_become_numbered_imperative_steps(text, summary):
    fact = procedure_fact(turn(text))
    assert fact is not None and fact.summary == summary
    assert fact.type == "procedural" and fact.category == "Procedural"


@pytest.mark.parametrize("text", [
    "My deploy routine: first I run the tests, then I tag the release.",  # no goal, no numbers
    "I went hiking then I had lunch.",
    "I have 2 dogs and 3 cats.",
    "To be honest, I love jazz.",
])
def test_anything_less_is_not_a_procedure(text):
    assert procedure_fact(turn(text)) is None


def test_the_assistant_does_not_make_the_users_procedures():
    assert detect("1. Open settings. 2. Tap Wi-Fi. 3. Forget the network.") is not None
    assert procedure_fact(turn("1. Open settings. 2. Tap Wi-Fi. 3. Forget the network.",
                               role="assistant")) is None


def test_the_pipeline_stores_a_procedure_as_one_fact():
    pipeline = FactPipeline(WriteSettings())
    result = pipeline.facts(turn("Remember how to reset my router: unplug it, wait 30 seconds, "
                                 "plug it back in."))
    [fact] = result.facts
    assert fact.type == "procedural" and fact.category == "Procedural" and "explicit" in fact.tags


def test_a_procedural_fact_nothing_detected_is_stored_as_semantic():
    pipeline = FactPipeline(WriteSettings())
    result = pipeline.facts(turn("My deploy routine: first I run the tests, then I tag the release."))
    assert result.facts and all(f.type != "procedural" for f in result.facts)
    llm_fact = Fact(type="procedural", summary="Ana restarts the router when it drops.")
    assert settle(llm_fact).type == "semantic"


def test_a_secret_in_the_steps_is_never_stored():
    pipeline = FactPipeline(WriteSettings())
    result = pipeline.facts(turn("Remember how to log in: open the portal, enter password: "
                                 "hunter2-Xq9!zz, press enter."))
    assert result.facts == []


def test_a_query_returns_procedures_only_when_it_asks_for_them():
    steps = mem("p", type="procedural", category="Procedural",
                summary="How to reset Ana's router: 1. Unplug it. 2. Plug it back in.")
    index = index_of((steps, 0.95), (mem("a"), 0.5))
    assert ids(ask(index, top_k=5)) == ["a"]
    assert ids(ask(index, top_k=5, categories=["Procedural"])) == ["p"]
    assert ids(ask(index, top_k=5, filters={"category": "procedural"})) == ["p"]
