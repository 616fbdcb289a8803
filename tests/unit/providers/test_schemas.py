"""Output parsing and validation, and the prompt files shipped as package data."""
from __future__ import annotations

import pytest

from streams.providers.llm import LLMInvalidOutput, Task
from streams.providers.llm.parsing import json_object, parse_output
from streams.providers.llm.prompts import system_prompt
from streams.providers.llm.schemas import (
    ExtractionOutput,
    FactOutput,
    SameFactOutput,
    TriggerOutput,
)


@pytest.mark.parametrize("task", list(Task))
def test_every_task_has_a_prompt_asking_for_json(task: Task) -> None:
    prompt = system_prompt(task)
    assert "JSON" in prompt and len(prompt) > 200


@pytest.mark.parametrize("text", [
    '{"same_fact": true}',
    '```json\n{"same_fact": true}\n```',
    'Here you go: {"same_fact": true} Hope that helps.',
])
def test_json_object_is_found_around_noise(text: str) -> None:
    assert json_object(text) == {"same_fact": True}


@pytest.mark.parametrize("text", ["", "no json here", '{"same_fact": ', "[1, 2]", '"{"'])
def test_no_json_object_is_invalid(text: str) -> None:
    with pytest.raises(LLMInvalidOutput):
        json_object(text)


def test_schema_errors_name_fields_not_values() -> None:
    with pytest.raises(LLMInvalidOutput) as info:
        parse_output('{"should_create": "secret-value-xyz", "confidence": 2}', TriggerOutput)
    message = str(info.value)
    assert "should_create" in message and "confidence" in message
    assert "secret-value-xyz" not in message


def test_lists_are_trimmed_not_rejected() -> None:
    out = parse_output('{"should_create": true, "confidence": 0.8, "tags_hint": '
                       '["A","b","c","d","e","f","g"]}', TriggerOutput)
    assert out.tags_hint == ["a", "b", "c", "d", "e"]
    fact = {"summary": "Mel runs.", "category": "Personal", "importance": 2}
    extraction = ExtractionOutput.model_validate({"decision": "semantic", "facts": [fact] * 5})
    assert len(extraction.facts) == 3


@pytest.mark.parametrize("summary", [
    "I adopted a dog.",
    "Caroline said my dog is 3.",
    "Caroline has a dog. The dog is 3. It likes walks.",
    "x" * 281,
    "   ",
])
def test_summaries_breaking_the_writing_constraints_are_rejected(summary: str) -> None:
    with pytest.raises(ValueError):
        FactOutput(summary=summary, category="Personal", importance=3)


@pytest.mark.parametrize("summary", [
    "Caroline sees Dr. Lee every Monday. She trusts him.",
    "Caroline moved to the U.S. in 2020.",
    "Mel paid $3.50 for coffee.",
])
def test_ordinary_summaries_pass(summary: str) -> None:
    assert FactOutput(summary=summary, category="Personal", importance=3).summary == summary


def test_entity_key_is_normalised_or_rejected() -> None:
    ok = FactOutput(summary="Luna is 3.", category="Personal", importance=3,
                    entity_key="Profile:Pet:Luna:Age")
    assert ok.entity_key == "profile:pet:luna:age"
    with pytest.raises(ValueError):
        FactOutput(summary="Luna is 3.", category="Personal", importance=3, entity_key="luna age")


@pytest.mark.parametrize("payload", [
    {"decision": "semantic", "facts": []},  # a kind without facts
    {"decision": "maybe", "facts": []},
    {"decision": "semantic", "facts": [{"summary": "Mel runs.", "category": "Sports", "importance": 2}]},
    {"decision": "semantic", "facts": [{"summary": "Mel runs.", "category": "Other", "importance": 9}]},
])
def test_invalid_extractions_are_rejected(payload: dict) -> None:
    with pytest.raises(ValueError):
        ExtractionOutput.model_validate(payload)


def test_same_fact_needs_a_boolean() -> None:
    assert SameFactOutput.model_validate({"same_fact": False}).same_fact is False
    with pytest.raises(ValueError):
        SameFactOutput.model_validate({"same_fact": "perhaps"})
