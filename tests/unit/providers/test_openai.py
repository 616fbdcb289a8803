"""GuardedLLM over the real AsyncOpenAI client talking to a local fake OpenAI-compatible server:
structured output, the json_object fallback, budgets, HTTP errors and garbage → rules, counted."""
from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from streams.guarded.llm import Deadline, GuardedLLM
from streams.providers.llm import LLMTimeout, OpenAIProvider, Task
from streams.providers.llm.factory import create_provider
from streams.providers.llm.prompts import system_prompt
from streams.providers.llm.structured import json_schema
from streams.write.facts import FactPipeline
from streams.write.trigger import TriggerDecision
from tests.unit.providers.conftest import (
    AMPLE_BUDGETS,
    HANG_GUARD_S,
    ManualDeadline,
    Reply,
    fallbacks,
    sample,
    settings,
    turn,
)
from tests.unit.providers.openai_fake import USAGE, FakeChatAPI, fake_chat  # noqa: F401 - fixture
from tests.unit.providers.test_anthropic import BAD_REPLIES, EXTRACT_OK, TEXT, TRIGGER_OK, _rules, _run

KEY = "sk-test-openai-0123456789"


@pytest.fixture
async def make_llm(fake_chat: FakeChatAPI) -> AsyncIterator[Callable[..., GuardedLLM]]:  # noqa: F811
    """GuardedLLMs over the fake, built by the factory from settings (`AMPLE_BUDGETS`,
    `LLM_MODE=replace` unless overridden: the model's own answer is what these tests check)."""
    built: list[GuardedLLM] = []

    def make(*, deadline: Deadline = asyncio.wait_for, **overrides: Any) -> GuardedLLM:
        s = settings(**{"llm_provider": "openai", "openai_base_url": fake_chat.base_url,
                        "openai_api_key": KEY, "llm_mode": "replace", "llm_max_retries": 2,
                        **AMPLE_BUDGETS, **overrides})
        built.append(GuardedLLM(create_provider(s), s, deadline=deadline))
        return built[-1]

    yield make
    for guarded in built:
        await guarded.aclose()


async def test_structured_output_is_asked_with_the_tasks_schema(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI  # noqa: F811
) -> None:
    fake_chat.script(Reply.json(TRIGGER_OK))
    tokens_in = sample("memstream_llm_tokens_total", provider="openai", task="trigger", direction="in")
    tokens_out = sample("memstream_llm_tokens_total", provider="openai", task="trigger", direction="out")

    decision = await _run(make_llm(llm_model="qwen2.5:0.5b"), "trigger")

    assert decision == TriggerDecision(True, "semantic", ("pet", "dog", "luna"), 0.87)
    (request,) = fake_chat.requests
    assert request["headers"]["authorization"] == f"Bearer {KEY}"
    assert request["headers"]["x-stainless-retry-count"] == "0"
    body = request["body"]
    assert body["model"] == "qwen2.5:0.5b"
    system = body["messages"][0]
    assert system == {"role": "system", "content": system_prompt(Task.trigger, shape=False)}
    assert '"should_create"' in system_prompt(Task.trigger) and '"should_create"' not in system["content"], \
        "the schema is in response_format, so the prompt leaves the answer's shape out"
    assert json.loads(body["messages"][1]["content"])["turns"] == [{"n": 1, "speaker": "Caroline", "text": TEXT}]
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "memstream_trigger", "schema": json_schema(Task.trigger), "strict": False}}
    assert body["temperature"] == 0.0 and body["max_tokens"] == 150
    assert sample("memstream_llm_tokens_total", provider="openai", task="trigger",
                  direction="in") == tokens_in + USAGE["prompt_tokens"]
    assert sample("memstream_llm_tokens_total", provider="openai", task="trigger",
                  direction="out") == tokens_out + USAGE["completion_tokens"]


async def test_extract_returns_the_models_facts_with_a_task_model(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI  # noqa: F811
) -> None:
    fake_chat.script(Reply.json(EXTRACT_OK))
    llm = make_llm(llm_model="small", llm_model_extract="bigger")

    facts = await _run(llm, "extract")

    assert [f.summary for f in facts] == ["Caroline adopted a dog named Luna on 7 May 2023.",
                                          "Caroline's dog Luna is 3 years old and loves the beach."]
    assert fake_chat.requests[0]["body"]["model"] == "bigger"
    fake_chat.script(Reply.json({"same_fact": True}))
    assert await _run(llm, "same_fact") is True
    assert fake_chat.requests[1]["body"]["model"] == "small", "LLM_MODEL for the other tasks"


@pytest.mark.parametrize("refusal", [400, 500])  # OpenAI-style 400; llama.cpp's server answers 500
async def test_a_server_refusing_json_schema_is_asked_in_json_mode_from_then_on(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI, refusal: int  # noqa: F811
) -> None:
    fake_chat.refuse_json_schema = refusal
    fake_chat.script(Reply.json({"same_fact": True}))
    llm = make_llm()
    before = fallbacks("openai", "same_fact", "server_error") + fallbacks("openai", "same_fact", "request_error")

    assert await _run(llm, "same_fact") is True  # the model's answer, not the rules' False
    assert await _run(llm, "same_fact") is True

    assert fake_chat.forms() == ["json_schema", "json_object", "json_object"]
    assert fake_chat.requests[1]["body"]["response_format"]["schema"] == json_schema(Task.same_fact)
    assert fallbacks("openai", "same_fact", "server_error") + fallbacks(
        "openai", "same_fact", "request_error") == before, "a refused form is no fallback"


@pytest.mark.parametrize(("form", "sent"), [("json_object", "json_object"), ("none", None),
                                            ("json_schema", "json_schema")])
async def test_the_configured_form_is_the_only_one_asked(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI, form: str, sent: str | None  # noqa: F811
) -> None:
    fake_chat.script(Reply.json({"same_fact": True}))
    llm = make_llm(openai_response_format=form)
    assert await _run(llm, "same_fact") is True
    assert await _run(llm, "same_fact") is True
    assert fake_chat.forms() == [sent, sent]


async def test_json_schema_configured_and_refused_falls_back_to_rules(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI  # noqa: F811
) -> None:
    fake_chat.refuse_json_schema = 400
    before = fallbacks("openai", "trigger", "request_error")
    assert await _run(make_llm(openai_response_format="json_schema"), "trigger") == _rules("trigger")
    assert fake_chat.forms() == ["json_schema"]
    assert fallbacks("openai", "trigger", "request_error") == before + 1


@pytest.mark.parametrize("task", ["trigger", "extract", "same_fact"])
@pytest.mark.parametrize("case", [*BAD_REPLIES, "truncated"])
async def test_bad_answers_fall_back_to_rules_and_are_counted(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI, task: str, case: str  # noqa: F811
) -> None:
    reply, reason = BAD_REPLIES.get(case) or (
        Reply(text=json.dumps({"same_fact": True})[:-3], stop_reason="max_tokens"), "invalid_output")
    fake_chat.script(reply)
    before = fallbacks("openai", task, reason)

    assert await _run(make_llm(openai_response_format="json_object"), task) == _rules(task)
    assert fallbacks("openai", task, reason) == before + 1


@pytest.mark.parametrize("garbage", ["<html><body>502 Bad Gateway</body></html>", '{"foo": 1}'])
async def test_a_body_that_is_no_chat_completion_is_invalid_output(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI, garbage: str  # noqa: F811
) -> None:
    fake_chat.garbage = garbage
    before = fallbacks("openai", "extract", "invalid_output")
    assert await _run(make_llm(), "extract") == _rules("extract")
    assert fallbacks("openai", "extract", "invalid_output") == before + 1


async def test_trigger_never_retries_and_the_cold_path_does(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI  # noqa: F811
) -> None:
    fake_chat.script(Reply.error(503))
    llm = make_llm(openai_response_format="json_object")
    await _run(llm, "trigger")
    assert len(fake_chat.requests) == 1
    await _run(llm, "extract")
    assert len(fake_chat.requests) == 1 + 3, "llm_max_retries=2"


@pytest.mark.parametrize("task", ["trigger", "extract", "same_fact"])
async def test_a_call_past_its_budget_falls_back_to_rules_and_is_counted(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI, task: str  # noqa: F811
) -> None:
    """The server never answers; the budget runs out when the test says so, not on a clock."""
    deadline = ManualDeadline()
    llm = make_llm(deadline=deadline, trigger_budget_ms=300_000, llm_extract_budget_ms=400_000,
                   llm_same_fact_budget_ms=500_000)
    fake_chat.script(Reply(hang=True))
    before = fallbacks("openai", task, "timeout")
    call = asyncio.ensure_future(_run(llm, task))

    await asyncio.wait_for(fake_chat.hanging.wait(), HANG_GUARD_S)
    assert not call.done(), "no answer before the budget runs out"
    deadline.expire()

    assert await call == _rules(task)
    assert deadline.budgets == [{"trigger": 300.0, "extract": 400.0, "same_fact": 500.0}[task]]
    assert fallbacks("openai", task, "timeout") == before + 1


async def test_the_sdk_timeout_is_the_tasks_budget(fake_chat: FakeChatAPI) -> None:  # noqa: F811
    """The request itself carries the budget: a server that never answers times the call out in
    the SDK (a blocking fake: only the 50 ms timeout can end it), mapped to `LLMTimeout`."""
    fake_chat.script(Reply(hang=True))
    provider = OpenAIProvider.build(model="m", base_url=fake_chat.base_url, max_retries=0)
    try:
        with pytest.raises(LLMTimeout):
            await asyncio.wait_for(provider.complete(Task.trigger, "s", "u", timeout_s=0.05), HANG_GUARD_S)
    finally:
        await provider.aclose()


async def test_the_policy_refuses_a_secret_the_model_wrote(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI  # noqa: F811
) -> None:
    """The turn carries no secret, so the model is asked; it "remembers" a password all the same
    (what a small model does), and the write policy after it refuses that fact."""
    said = "Ana told me about her new job at the bakery."
    secret = {"summary": "Caroline says Ana's password is hunter2.", "category": "Personal", "importance": 3}
    job = {"summary": "Caroline's friend Ana works at a bakery.", "category": "Personal", "importance": 2}
    llm = make_llm(llm_mode="hybrid")
    # One answer fit for both questions: whether the trigger asks the model is the rules' call.
    fake_chat.script(Reply.json({**TRIGGER_OK, "decision": "semantic", "facts": [secret, job]}))
    pipeline = FactPipeline(llm.settings.write)

    result = await asyncio.wait_for(pipeline.afacts(turn(said), (), llm), HANG_GUARD_S)

    assert fake_chat.requests[-1]["body"]["messages"][0]["content"] == system_prompt(Task.extract, shape=False), \
        "the model was asked for the facts"
    summaries = [f.summary for f in result.facts]
    assert "Caroline's friend Ana works at a bakery." in summaries
    assert not any("hunter2" in s for s in summaries)
    assert result.blocked, "the refusal is recorded"


async def test_neither_the_key_nor_the_turn_reaches_the_logs(
    make_llm: Callable[..., GuardedLLM], fake_chat: FakeChatAPI, caplog: pytest.LogCaptureFixture  # noqa: F811
) -> None:
    fake_chat.refuse_json_schema = 500
    fake_chat.script(Reply.json(TRIGGER_OK), Reply(text="not json " + TEXT))
    with caplog.at_level(logging.DEBUG):
        llm = make_llm()
        await _run(llm, "trigger")
        await _run(llm, "trigger")
    assert "json_object" in caplog.text, "the downgrade is logged"
    assert KEY not in caplog.text and TEXT not in caplog.text and "Luna" not in caplog.text
