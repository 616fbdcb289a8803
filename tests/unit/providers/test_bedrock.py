"""GuardedLLM over BedrockProvider, with a real bedrock-runtime client stubbed by botocore's Stubber."""
from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import ANY, Stubber

from streams.memory.dedup import same_fact_heuristic
from streams.write.extraction import RulesExtractor
from streams.guarded.llm import GuardedLLM
from streams.providers.llm import BedrockProvider, Task
from streams.providers.llm.prompts import system_prompt
from streams.write.trigger import TriggerDecision, rules_trigger
from tests.unit.providers.conftest import AMPLE_BUDGETS, HANG_GUARD_S, fallbacks, settings, turn

MODEL = "amazon.nova-micro-v1:0"
TEXT = "I adopted a dog named Luna yesterday. She is 3 years old and loves the beach!"
A, B = "Caroline has a dog named Luna.", "Luna is the name of Caroline's Beagle."


def converse(text: str, stop: str = "end_turn") -> dict[str, Any]:
    """A Converse response whose message is `text`."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": stop,
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 42},
    }


def expected(task: Task, max_tokens: int) -> dict[str, Any]:
    return {"modelId": MODEL, "system": [{"text": system_prompt(task)}], "messages": ANY,
            "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0.0}}


@pytest.fixture
def client() -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub


@pytest.fixture
async def llm(client: Any, stubber: Stubber) -> AsyncIterator[GuardedLLM]:
    """Real budgets, ample enough that only the stubbed answer decides (see `AMPLE_BUDGETS`);
    `LLM_MODE=replace`, so what is checked is the model's answer alone (test_hybrid.py: the merge)."""
    guarded = GuardedLLM(BedrockProvider(MODEL, client),
                         settings(llm_provider="bedrock", llm_mode="replace", **AMPLE_BUDGETS))
    yield guarded
    await guarded.aclose()


async def test_trigger_returns_the_models_decision(llm: GuardedLLM, stubber: Stubber) -> None:
    answer = {"should_create": True, "type_hint": "episodic", "tags_hint": ["pet"], "confidence": 0.7}
    stubber.add_response("converse", converse(json.dumps(answer)), expected(Task.trigger, 150))

    decision = await llm.trigger(turn(TEXT))

    assert decision == TriggerDecision(True, "episodic", ("pet",), 0.7)
    stubber.assert_no_pending_responses()


async def test_extract_returns_the_models_facts(llm: GuardedLLM, stubber: Stubber) -> None:
    answer = {"decision": "episodic", "facts": [
        {"summary": "Caroline adopted a dog named Luna yesterday.", "category": "Personal",
         "tags": ["pet"], "entities": ["Luna"], "importance": 4}]}
    fenced = f"```json\n{json.dumps(answer)}\n```"  # a code fence around the object is tolerated
    stubber.add_response("converse", converse(fenced), expected(Task.extract, 900))

    (fact,) = await llm.extract(turn(TEXT))

    assert fact.type == "episodic"
    assert fact.summary == "Caroline adopted a dog named Luna on 7 May 2023."


async def test_same_fact_returns_the_models_answer(llm: GuardedLLM, stubber: Stubber) -> None:
    stubber.add_response("converse", converse('{"same_fact": true}'), expected(Task.same_fact, 30))
    assert same_fact_heuristic(A, (), B, ()) is False
    assert await llm.same_fact(A, B) is True


BAD = {
    "malformed_json": (lambda s: s.add_response("converse", converse('{"same_fact": tru')), "invalid_output"),
    "schema": (lambda s: s.add_response("converse", converse('{"confidence": "high", "facts": 3}')),
               "invalid_output"),
    "max_tokens": (lambda s: s.add_response("converse", converse('{"same_fact"', stop="max_tokens")),
                   "invalid_output"),
    "throttled": (lambda s: s.add_client_error("converse", "ThrottlingException", "Rate exceeded", 429),
                  "rate_limited"),
    "server": (lambda s: s.add_client_error("converse", "InternalServerException", "boom", 500),
               "server_error"),
    "unavailable": (lambda s: s.add_client_error("converse", "ServiceUnavailableException", "busy", 503),
                    "server_error"),
    "model_timeout": (lambda s: s.add_client_error("converse", "ModelTimeoutException", "slow", 408),
                      "timeout"),
    "validation": (lambda s: s.add_client_error("converse", "ValidationException", "bad model", 400),
                   "request_error"),
}


@pytest.mark.parametrize("task", ["trigger", "extract", "same_fact"])
@pytest.mark.parametrize("case", list(BAD))
async def test_bad_answers_fall_back_to_rules_and_are_counted(
    llm: GuardedLLM, stubber: Stubber, task: str, case: str
) -> None:
    script, reason = BAD[case]
    script(stubber)
    before = fallbacks("bedrock", task, reason)

    if task == "trigger":
        assert await llm.trigger(turn(TEXT)) == rules_trigger(turn(TEXT))
    elif task == "extract":
        assert await llm.extract(turn(TEXT)) == RulesExtractor().extract(turn(TEXT))
    else:
        assert await llm.same_fact(A, B) is same_fact_heuristic(A, (), B, ())

    assert fallbacks("bedrock", task, reason) == before + 1


async def test_slow_bedrock_trigger_falls_back_on_the_budget(client: Any) -> None:
    """The boto3 call runs on a thread: the event loop gives up at the budget and uses the rules.

    The call blocks until the test releases it, after the fallback: only the (real, 50 ms)
    budget can end it, however slow the machine."""
    release = threading.Event()

    def blocked_answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        # Answers the call itself once released, so the late thread never reaches the network.
        release.wait()
        return AWSResponse(None, 200, {}, None), converse('{"should_create": true, "confidence": 0.9}')

    client.meta.events.register("before-call.*.*", blocked_answer)  # no Stubber in this test
    llm = GuardedLLM(BedrockProvider(MODEL, client), settings(llm_provider="bedrock", llm_mode="replace",
                                                                trigger_budget_ms=50))
    before = fallbacks("bedrock", "trigger", "timeout")

    try:
        decision = await asyncio.wait_for(llm.trigger(turn(TEXT)), HANG_GUARD_S)
    finally:
        release.set()
        await llm.aclose()
    assert decision == rules_trigger(turn(TEXT))
    assert fallbacks("bedrock", "trigger", "timeout") == before + 1
