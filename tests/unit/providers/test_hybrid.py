"""Hybrid by design: with `LLM_MODE=hybrid` (the default) the model adds to the rules' answers,
with `replace` it stands alone; a failed call is the rules' either way."""
from __future__ import annotations

import json
from typing import Any

import pytest

from streams.guarded.llm import GuardedLLM
from streams.providers.llm import LLMServerError, Task
from streams.write.extraction import RulesExtractor
from streams.write.trigger import TriggerDecision, rules_trigger
from tests.unit.providers.conftest import settings, turn

LUNA = "I adopted a dog named Luna yesterday. She is 3 years old and loves the beach!"
SMALL_TALK = "Hey, how are you?"


class ScriptedProvider:
    """An `LLMProvider` that answers each task with its scripted JSON (or raises)."""

    name = "scripted"
    model = "scripted-1"

    def __init__(self, answers: dict[Task, Any]) -> None:
        self.answers = answers
        self.asked: list[Task] = []

    async def complete(self, task: Task, system: str, user: str, *, timeout_s: float,
                       turns: int = 1) -> str:
        self.asked.append(task)
        answer = self.answers[task]
        if isinstance(answer, Exception):
            raise answer
        return json.dumps(answer)

    async def aclose(self) -> None:
        return None


def _llm(answers: dict[Task, Any], mode: str | None = None) -> GuardedLLM:
    return GuardedLLM(ScriptedProvider(answers), settings(**({"llm_mode": mode} if mode else {})))


def _fact(summary: str, key: str | None = None) -> dict[str, Any]:
    return {"summary": summary, "category": "Personal", "importance": 3, "entity_key": key}


def test_hybrid_is_the_default() -> None:
    assert settings().llm.llm_mode == "hybrid"


async def test_the_trigger_asks_the_model_only_where_the_rules_say_no() -> None:
    no = {Task.trigger: {"should_create": False, "confidence": 0.9}}
    rules = rules_trigger(turn(LUNA))
    assert rules.should_create
    hybrid = _llm(no)

    assert await hybrid.trigger(turn(LUNA)) == rules
    assert hybrid.provider.asked == []  # type: ignore[union-attr]
    assert (await _llm(no, "replace").trigger(turn(LUNA))).should_create is False


async def test_a_models_yes_adds_a_candidate_the_rules_would_not_keep() -> None:
    yes = {Task.trigger: {"should_create": True, "type_hint": "semantic", "tags_hint": ["pet"],
                          "confidence": 0.7}}
    assert not rules_trigger(turn(SMALL_TALK)).should_create
    assert await _llm(yes).trigger(turn(SMALL_TALK)) == TriggerDecision(True, "semantic", ("pet",), 0.7)


async def test_a_models_skip_keeps_the_rules_facts_in_hybrid_only() -> None:
    skip = {Task.extract: {"decision": "skip", "facts": []}}
    rules = RulesExtractor().extract(turn(LUNA))
    assert rules

    assert await _llm(skip).extract(turn(LUNA)) == rules
    assert await _llm(skip, "replace").extract(turn(LUNA)) == []


async def test_the_models_new_facts_are_added_and_its_duplicates_dropped() -> None:
    rules = RulesExtractor().extract(turn(LUNA))
    assert [f.entity_key for f in rules] == [None, "profile:pet:luna:age"]
    answer = {Task.extract: {"decision": "semantic", "facts": [
        _fact("caroline ADOPTED a dog named Luna on 7 May 2023"),  # same summary, other case
        _fact("Caroline's dog Luna is three.", "profile:pet:luna:age"),  # same entity key
        _fact("Caroline loves taking Luna to the beach.", "profile:pet:luna:hobby"),  # new
    ]}}

    facts = await _llm(answer).extract(turn(LUNA))

    assert facts[:2] == rules, "the rules' facts first, as they were"
    assert [f.summary for f in facts[2:]] == ["Caroline loves taking Luna to the beach."]


@pytest.mark.parametrize("mode", ["hybrid", "replace"])
async def test_a_failed_call_is_answered_by_the_rules_alone(mode: str) -> None:
    down = {Task.trigger: LLMServerError("scripted 500"), Task.extract: LLMServerError("scripted 500")}
    llm = _llm(down, mode)
    assert await llm.trigger(turn(LUNA)) == rules_trigger(turn(LUNA))
    assert await llm.extract(turn(LUNA)) == RulesExtractor().extract(turn(LUNA))
    assert llm.provider.asked == ([Task.extract] if mode == "hybrid" else [Task.trigger, Task.extract])  # type: ignore[union-attr]
