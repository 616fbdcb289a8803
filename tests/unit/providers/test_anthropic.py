"""GuardedLLM over the real AsyncAnthropic client talking to a local fake Messages API."""
from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from streams.memory.dedup import same_fact_heuristic
from streams.write.extraction import RulesExtractor
from streams.guarded.llm import GuardedLLM
from streams.providers.llm import AnthropicProvider, OpenAIProvider, Task
from streams.providers.llm.prompts import system_prompt
from streams.write.trigger import TriggerDecision, rules_trigger
from streams.guarded.llm import Deadline
from tests.unit.providers.conftest import (
    AMPLE_BUDGETS,
    HANG_GUARD_S,
    FakeMessagesAPI,
    ManualDeadline,
    Reply,
    fallbacks,
    sample,
    settings,
    turn,
)

TEXT = "I adopted a dog named Luna yesterday. She is 3 years old and loves the beach!"
CONTEXT = [turn("Hey Mel, how are you?", turn_id="1"),
           turn("Great! What's new with you?", speaker="Mel", turn_id="2")]
TRIGGER_OK = {"should_create": True, "type_hint": "semantic", "tags_hint": ["pet", "dog", "Luna"],
              "confidence": 0.87}
EXTRACT_OK = {"decision": "semantic", "facts": [
    {"type": "semantic", "summary": "Caroline adopted a dog named Luna yesterday", "category": "Personal",
     "tags": ["pet", "dog"], "entities": ["Luna"], "importance": 4, "entity_key": None},
    {"summary": "Caroline's dog Luna is 3 years old and loves the beach.", "category": "Personal",
     "tags": ["pet"], "entities": ["Luna", "3"], "importance": 3, "entity_key": "profile:pet:luna:age"},
]}
A, B = "Caroline has a dog named Luna.", "Luna is the name of Caroline's Beagle."
BAD_REPLIES = {
    "malformed_json": (Reply(text='{"should_create": true, "confidence": 0.9'), "invalid_output"),
    "prose": (Reply(text="Sure! I think this is worth remembering."), "invalid_output"),
    "schema": (Reply.json({"should_create": "maybe", "confidence": 7, "same_fact": "perhaps",
                           "decision": "semantic", "facts": []}), "invalid_output"),
    "rate_limited": (Reply.error(429), "rate_limited"),
    "server_error": (Reply.error(500), "server_error"),
    "overloaded": (Reply.error(529), "server_error"),
    "unauthorised": (Reply.error(401), "request_error"),
}
# Budgets of the budget tests: ample (a busy machine never runs them out), distinct per task.
BUDGETS_MS = {"trigger": 300_000, "extract": 400_000, "same_fact": 500_000}


@pytest.fixture
async def make_llm(fake_api: FakeMessagesAPI) -> AsyncIterator[Callable[..., GuardedLLM]]:
    """Builds a GuardedLLM over the fake (`AMPLE_BUDGETS` unless overridden); closes them all.
    `LLM_MODE=replace`: these tests check the model's own answer (test_hybrid.py the merge)."""
    built: list[GuardedLLM] = []

    def make(*, deadline: Deadline = asyncio.wait_for, **overrides: Any) -> GuardedLLM:
        s = settings(anthropic_api_key="test-key", anthropic_base_url=fake_api.base_url,
                     llm_max_retries=2, **{"llm_mode": "replace", **AMPLE_BUDGETS, **overrides})
        provider = AnthropicProvider.build(api_key="test-key", model=s.llm.anthropic_model,
                                           base_url=fake_api.base_url, max_retries=s.llm.llm_max_retries)
        built.append(GuardedLLM(provider, s, deadline=deadline))
        return built[-1]

    yield make
    for guarded in built:
        await guarded.aclose()


@pytest.fixture
def llm(make_llm: Callable[..., GuardedLLM]) -> GuardedLLM:
    """Real budgets (`asyncio.wait_for`), ample enough that only the model's answer decides."""
    return make_llm()


def _call(llm: GuardedLLM, task: str) -> Awaitable[Any]:
    return {
        "trigger": lambda: llm.trigger(turn(TEXT), CONTEXT),
        "extract": lambda: llm.extract(turn(TEXT), CONTEXT),
        "same_fact": lambda: llm.same_fact(A, B),
    }[task]()


async def _run(llm: GuardedLLM, task: str) -> Any:
    """One call of `task`, bounded so that a hang fails the test instead of stalling the suite."""
    return await asyncio.wait_for(_call(llm, task), HANG_GUARD_S)


def _rules(task: str) -> Any:
    return {
        "trigger": lambda: rules_trigger(turn(TEXT)),
        "extract": lambda: RulesExtractor().extract(turn(TEXT)),
        "same_fact": lambda: same_fact_heuristic(A, (), B, ()),
    }[task]()


async def test_trigger_returns_the_models_decision(llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    fake_api.script(Reply.json(TRIGGER_OK))
    before = sample("memstream_llm_calls_total", provider="anthropic", task="trigger", outcome="ok")

    decision = await _run(llm, "trigger")

    assert decision == TriggerDecision(True, "semantic", ("pet", "dog", "luna"), 0.87)
    assert decision != rules_trigger(turn(TEXT))
    assert sample("memstream_llm_calls_total", provider="anthropic", task="trigger",
                  outcome="ok") == before + 1
    (request,) = fake_api.requests
    headers = request["headers"]
    assert "test-key" in headers.get("x-api-key", "") + headers.get("authorization", "")
    assert headers["x-stainless-retry-count"] == "0"
    body = request["body"]
    assert body["model"] == "claude-haiku-4-5"
    assert body["system"] == system_prompt(Task.trigger), "no schema is sent: the prompt gives the shape"
    assert '"should_create"' in body["system"]
    data = json.loads(body["messages"][0]["content"])
    assert data["turns"] == [{"n": 1, "speaker": "Caroline", "text": TEXT}]
    assert data["context"] == ["Caroline: Hey Mel, how are you?", "Mel: Great! What's new with you?"]


async def test_extract_returns_the_models_facts(llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    fake_api.script(Reply.json(EXTRACT_OK))

    facts = await _run(llm, "extract")

    assert [f.summary for f in facts] == [
        "Caroline adopted a dog named Luna on 7 May 2023.",  # relative date resolved, tidied
        "Caroline's dog Luna is 3 years old and loves the beach.",
    ]
    assert [f.type for f in facts] == ["semantic", "semantic"]  # second type from the decision
    assert facts[1].entity_key == "profile:pet:luna:age"
    assert facts[0].importance == 4 and facts[0].category == "Personal"
    assert (str(facts[0].event_start), str(facts[0].event_end)) == ("2023-05-07", "2023-05-07")
    assert facts[1].valence == "positive" and facts[1].intensity  # "loves the beach"
    data = json.loads(fake_api.requests[0]["body"]["messages"][0]["content"])
    assert "date" not in data["turns"][0], "the model's relative dates are resolved against the turn's day"


async def test_extract_skip_means_no_facts(llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    fake_api.script(Reply.json({"decision": "skip", "facts": []}))
    assert await _run(llm, "extract") == []


async def test_same_fact_returns_the_models_answer(llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    fake_api.script(Reply.json({"same_fact": True}))
    assert same_fact_heuristic(A, (), B, ()) is False  # so the True below is the model's
    assert await _run(llm, "same_fact") is True
    assert json.loads(fake_api.requests[0]["body"]["messages"][0]["content"]) == {"a": A, "b": B}


@pytest.mark.parametrize("task", ["trigger", "extract", "same_fact"])
@pytest.mark.parametrize("case", list(BAD_REPLIES))
async def test_bad_answers_fall_back_to_rules_and_are_counted(
    llm: GuardedLLM, fake_api: FakeMessagesAPI, task: str, case: str
) -> None:
    reply, reason = BAD_REPLIES[case]
    fake_api.script(reply)
    before = fallbacks("anthropic", task, reason)

    result = await _run(llm, task)

    assert result == _rules(task)
    assert fallbacks("anthropic", task, reason) == before + 1


async def test_trigger_never_retries(llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    fake_api.script(Reply.error(500))
    await _run(llm, "trigger")
    assert len(fake_api.requests) == 1


@pytest.mark.parametrize("task", ["extract", "same_fact"])
async def test_cold_path_retries_within_its_budget(
    llm: GuardedLLM, fake_api: FakeMessagesAPI, task: str
) -> None:
    fake_api.script(Reply.error(500))
    await _run(llm, task)
    assert len(fake_api.requests) == 3  # llm_max_retries=2


async def test_a_retry_that_succeeds_is_not_a_fallback(llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    fake_api.script(Reply.error(429), Reply.json({"same_fact": True}))
    before = fallbacks("anthropic", "same_fact", "rate_limited")
    assert await _run(llm, "same_fact") is True
    assert len(fake_api.requests) == 2
    assert fallbacks("anthropic", "same_fact", "rate_limited") == before


@pytest.mark.parametrize("task", ["trigger", "extract", "same_fact"])
async def test_a_call_past_its_budget_falls_back_to_rules_and_is_counted(
    make_llm: Callable[..., GuardedLLM], fake_api: FakeMessagesAPI, task: str
) -> None:
    """The model never answers; the budget runs out when the test says so, not on a clock."""
    deadline = ManualDeadline()
    llm = make_llm(deadline=deadline, trigger_budget_ms=BUDGETS_MS["trigger"],
                   llm_extract_budget_ms=BUDGETS_MS["extract"],
                   llm_same_fact_budget_ms=BUDGETS_MS["same_fact"])
    fake_api.script(Reply(hang=True))
    before = fallbacks("anthropic", task, "timeout")
    latency_count = sample("memstream_llm_call_duration_seconds_count", provider="anthropic",
                           task=task, outcome="fallback")
    call = asyncio.ensure_future(_run(llm, task))

    await asyncio.wait_for(fake_api.hanging.wait(), HANG_GUARD_S)  # the request is in the fake
    assert not call.done(), "no answer before the budget runs out"
    deadline.expire()
    result = await call

    assert result == _rules(task)
    assert deadline.budgets == [BUDGETS_MS[task] / 1000], "the task's own budget"
    assert fallbacks("anthropic", task, "timeout") == before + 1
    assert sample("memstream_llm_call_duration_seconds_count", provider="anthropic",
                  task=task, outcome="fallback") == latency_count + 1


@pytest.mark.parametrize("task", ["extract", "same_fact"])
async def test_the_budget_cuts_cold_path_retries_short(
    make_llm: Callable[..., GuardedLLM], fake_api: FakeMessagesAPI, task: str
) -> None:
    """The budget bounds the call with its retries: once it runs out, no further attempt."""
    deadline = ManualDeadline()
    llm = make_llm(deadline=deadline)
    fake_api.script(Reply.error(500), Reply(hang=True))  # the retry hangs
    before = fallbacks("anthropic", task, "timeout")
    call = asyncio.ensure_future(_run(llm, task))

    await asyncio.wait_for(fake_api.hanging.wait(), HANG_GUARD_S)
    deadline.expire()

    assert await call == _rules(task)
    assert len(fake_api.requests) == 2, "the first attempt and the retry the budget cut short"
    assert fallbacks("anthropic", task, "timeout") == before + 1


async def test_the_default_deadline_is_a_real_budget(
    make_llm: Callable[..., GuardedLLM], fake_api: FakeMessagesAPI
) -> None:
    """On the real clock (`asyncio.wait_for`): the fake answers only once released, after the
    call returned, so only the 50 ms budget can end it, however slow the machine."""
    llm = make_llm(trigger_budget_ms=50)
    fake_api.script(Reply(hang=True))
    before = fallbacks("anthropic", "trigger", "timeout")

    decision = await _run(llm, "trigger")

    assert decision == rules_trigger(turn(TEXT))
    assert fallbacks("anthropic", "trigger", "timeout") == before + 1


async def test_summary_not_naming_the_speaker_is_invalid(llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    bad = {"decision": "semantic", "facts": [{"summary": "The dog Luna is 3 years old.",
                                              "category": "Personal", "importance": 3}]}
    fake_api.script(Reply.json(bad))
    before = fallbacks("anthropic", "extract", "invalid_output")
    assert await _run(llm, "extract") == _rules("extract")
    assert fallbacks("anthropic", "extract", "invalid_output") == before + 1


async def test_answer_cut_at_max_tokens_is_invalid(llm: GuardedLLM, fake_api: FakeMessagesAPI) -> None:
    fake_api.script(Reply(text=json.dumps({"same_fact": True}), stop_reason="max_tokens"))
    before = fallbacks("anthropic", "same_fact", "invalid_output")
    assert await _run(llm, "same_fact") is False
    assert fallbacks("anthropic", "same_fact", "invalid_output") == before + 1


@pytest.mark.parametrize("text", [
    "Please don't remember this: I adopted a dog.",  # explicit command: the rules decide
    "My password is hunter2, my dog Luna is 3.",  # a secret never leaves the worker
])
async def test_commands_and_secrets_never_reach_the_model(
    llm: GuardedLLM, fake_api: FakeMessagesAPI, text: str
) -> None:
    fake_api.script(Reply.json(TRIGGER_OK))
    assert await llm.trigger(turn(text)) == rules_trigger(turn(text))
    assert await llm.extract(turn(text)) == RulesExtractor().extract(turn(text))
    assert fake_api.requests == []


@pytest.mark.parametrize("name", ["anthropic", "openai"])
async def test_unreachable_api_falls_back(name: str) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = (AnthropicProvider.build(api_key="test-key", model="claude-haiku-4-5",
                                        base_url=f"http://127.0.0.1:{port}", max_retries=0)
                if name == "anthropic" else
                OpenAIProvider.build(model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0))
    llm = GuardedLLM(provider, settings(llm_mode="replace", **AMPLE_BUDGETS))  # refused, however long it takes
    before = fallbacks(name, "trigger", "unavailable")
    try:
        assert await asyncio.wait_for(llm.trigger(turn(TEXT)), HANG_GUARD_S) == rules_trigger(turn(TEXT))
    finally:
        await llm.aclose()
    assert fallbacks(name, "trigger", "unavailable") == before + 1
