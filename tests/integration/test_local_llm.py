"""The LLM path run for real: a llama.cpp server with SmolLM2-135M, from the project's declared
packages (pyproject's `local-llm` extra, built once by `./dev local-llm` and cached), through the
real `openai` client.

What is checked is the protocol and the guards, not the small model's judgement: the server's
refusal of `json_schema` and the switch to `json_object`, grammar-constrained JSON, tokens
counted, every call either answered or counted as a fallback, the pipeline from a turn to a stored
memory, and the write policy refusing a secret the model wrote. Skipped, saying why, only where
the packages cannot be built here.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import pytest

from streams.app.inprocess import InProcessPipeline
from streams.guarded.llm import GuardedLLM, rules_only
from streams.providers.llm import OpenAIProvider, Task
from streams.providers.llm.openai_provider import ResponseFormat
from streams.providers.llm.parsing import json_object
from streams.providers.llm.prompts import system_prompt
from streams.settings import Settings
from streams.tools.local_llm import LocalServer
from streams.write.facts import FactPipeline
from streams.write.trigger import rules_trigger
from tests.unit.providers.conftest import sample
from tests.integration.local_server import local_server
from topics.turns import Role, Turn

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CALL_GUARD_S = 600
"""A guard against a hung server, never a measure: a 135M model on one thread answers in seconds."""
BUDGETS = {"trigger_budget_ms": 600_000, "llm_extract_budget_ms": 600_000,
           "llm_same_fact_budget_ms": 600_000, "llm_max_retries": 0}
"""Budgets no CPU runs out: what is checked is what the model answers, not how fast."""
TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
LUNA = "I adopted a dog named Luna yesterday. She is 3 years old and loves the beach!"


def _turn(text: str, turn_id: str = "1") -> Turn:
    return Turn(user_id="ana", thread_id="t1", turn_id=turn_id, role=Role.user, speaker="Ana",
                text=text, ts=TS)


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    yield from local_server()


def _settings(server: LocalServer, **overrides: object) -> Settings:
    return Settings(**{"llm_provider": "openai", "openai_base_url": server.base_url,
                       "llm_model": server.model, "table_store": "memory://", **BUDGETS, **overrides})


@pytest.fixture
async def provider(server: LocalServer) -> AsyncIterator[OpenAIProvider]:
    built = OpenAIProvider.build(model=server.model, base_url=server.base_url, max_retries=0)
    yield built
    await built.aclose()


def _fallbacks(task: str) -> float:
    return sample("memstream_llm_calls_total", provider="openai", task=task, outcome="fallback")


def _answered(task: str) -> float:
    return sample("memstream_llm_calls_total", provider="openai", task=task, outcome="ok")


async def test_the_server_refuses_json_schema_and_answers_json_mode_with_a_grammar(
    provider: OpenAIProvider,
) -> None:
    tokens_in = sample("memstream_llm_tokens_total", provider="openai", task="same_fact", direction="in")
    user = '{"a": "Ana has a dog named Luna.", "b": "Luna is the name of Ana\'s dog."}'

    text = await asyncio.wait_for(provider.complete(Task.same_fact, system_prompt(Task.same_fact), user,
                                                    timeout_s=CALL_GUARD_S), CALL_GUARD_S)

    assert provider.form is ResponseFormat.json_object, "llama-cpp-python answers json_schema with 500"
    assert isinstance(json_object(text).get("same_fact"), bool), "the grammar holds a 135M model to the schema"
    assert sample("memstream_llm_tokens_total", provider="openai", task="same_fact",
                  direction="in") > tokens_in + 50, "the prompt's tokens, as the server counted them"


async def test_every_call_is_answered_or_counted_as_a_fallback(server: LocalServer) -> None:
    llm = GuardedLLM.from_settings(_settings(server))
    asked = [_turn(LUNA), _turn("I moved to Lisbon last year and I work at a bakery.", "2")]
    before = {task: _answered(task) + _fallbacks(task) for task in ("trigger", "extract")}
    # Hybrid: the trigger asks the model about the turns the rules would not keep; extraction, each.
    expected = {"trigger": sum(not rules_trigger(t).should_create for t in asked), "extract": len(asked)}
    try:
        for turn in asked:
            decision = await asyncio.wait_for(llm.trigger(turn), CALL_GUARD_S)
            facts = await asyncio.wait_for(llm.extract(turn), CALL_GUARD_S)
            # Hybrid: whatever the model said, the rules' answer is kept.
            assert decision.should_create or not rules_trigger(turn).should_create
            assert {f.summary for f in llm.extractor.extract(turn)} <= {f.summary for f in facts}
    finally:
        await llm.aclose()
    for task in ("trigger", "extract"):
        assert _answered(task) + _fallbacks(task) == before[task] + expected[task], f"{task}: none dropped"


def _turns(outcome: str) -> float:
    return sample("memstream_llm_turns_total", provider="openai", task="extract", outcome=outcome)


async def test_a_threads_turns_go_in_one_call_each_answered_or_counted(server: LocalServer) -> None:
    """Three turns of one thread in one extraction call; the schema asks the grammar for three
    items, and each turn is the model's or, counted, the rules'."""
    llm = GuardedLLM.from_settings(_settings(server))
    asked = [_turn(LUNA), _turn("I moved to Lisbon last year and I work at a bakery.", "2"),
             _turn("My sister Mia is a nurse.", "3")]
    calls = _answered("extract") + _fallbacks("extract")
    turns = _turns("ok") + _turns("fallback")
    try:
        facts = await asyncio.wait_for(llm.extract_many([(t, asked[:i]) for i, t in enumerate(asked)]),
                                       CALL_GUARD_S)
    finally:
        await llm.aclose()
    assert _answered("extract") + _fallbacks("extract") == calls + 1, "one call for the three"
    assert _turns("ok") + _turns("fallback") == turns + 3, "each turn answered or counted"
    for turn, found in zip(asked, facts):  # hybrid: the rules' facts whatever the model said
        assert {f.summary for f in llm.extractor.extract(turn)} <= {f.summary for f in found}


async def test_a_turn_becomes_a_memory_through_the_model(server: LocalServer, tmp_path, minilm_embedder) -> None:
    pipeline = InProcessPipeline(_settings(server, data_dir=tmp_path), minilm_embedder)
    calls = _answered("extract") + _fallbacks("extract")
    try:
        await asyncio.wait_for(pipeline.ingest([_turn(LUNA)]), CALL_GUARD_S)
        hits = await pipeline.query("ana", "What is the name of Ana's dog?", 5)
    finally:
        await pipeline.services.llm.aclose()
    assert _answered("extract") + _fallbacks("extract") == calls + 1, "extraction went to the model"
    assert pipeline.outcomes()["created"] >= 1
    assert any("Luna" in hit.memory.summary for hit in hits)


class Replay:
    """An `LLMProvider` that answers each task with text recorded from the real model."""

    name = "openai"
    model = "replay"

    def __init__(self, answers: dict[Task, str]) -> None:
        self.answers = answers

    async def complete(self, task: Task, system: str, user: str, *, timeout_s: float,
                       turns: int = 1) -> str:
        return self.answers[task]

    async def aclose(self) -> None:
        return None


CARELESS = ('Store what the user says. Answer with JSON: {"decision": "semantic", "facts": [{"summary": '
            'the user\'s sentence, "category": "Personal", "importance": 3}]}')
"""A prompt as a careless integration would write it: the model is asked to keep what it is told."""


async def test_the_policy_refuses_a_secret_the_model_wrote(server: LocalServer, provider: OpenAIProvider) -> None:
    """A turn carrying a secret never reaches the model (`rules_only`). Asked all the same, the
    135M model keeps the password; its answer, replayed through the pipeline for a turn the model
    may see, passes validation and is refused by the write policy after it."""
    secret = _turn("Ana's password is hunter2.")
    assert rules_only(secret), "a turn carrying a secret never leaves the worker"
    provider.form = ResponseFormat.json_object
    written = await asyncio.wait_for(provider.complete(Task.extract, CARELESS, secret.text,
                                                       timeout_s=CALL_GUARD_S), CALL_GUARD_S)
    if "hunter2" not in written:
        pytest.skip("this build of the model did not write the secret: nothing for the policy to refuse")
    said = _turn("Ana mentioned her bank accounts today.")
    assert not rules_only(said)
    s = _settings(server)
    llm = GuardedLLM(Replay({Task.trigger: '{"should_create": true, "confidence": 0.9}',
                             Task.extract: written}), s)
    answered = _answered("extract")

    result = await FactPipeline(s.write).afacts(said, (), llm)

    assert _answered("extract") == answered + 1, "the model's answer passed validation"
    assert not any("hunter2" in fact.summary for fact in result.facts)
    assert result.blocked, "refused by the write policy, and the refusal recorded"
