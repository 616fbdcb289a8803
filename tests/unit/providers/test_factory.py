"""Provider selection from the settings, and the rules-only facade when no LLM is configured."""
from __future__ import annotations

import logging

import pytest

from streams.memory.dedup import same_fact_heuristic
from streams.write.extraction import RulesExtractor
from streams.guarded.llm import GuardedLLM
from streams.providers.llm import (
    NO_LLM_MESSAGE,
    AnthropicProvider,
    BedrockProvider,
    LLMConfigError,
    create_provider,
)
from streams.providers.llm.metrics import LLM_CALLS
from streams.settings import Settings
from streams.write.trigger import rules_trigger
from tests.unit.providers.conftest import settings, turn

SECRET = "sk-ant-test-0123456789abcdef"


def test_no_key_means_rules_and_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="streams.providers"):
        assert create_provider(Settings()) is None
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.INFO, NO_LLM_MESSAGE)]


def test_llm_provider_none_wins_over_a_key(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="streams.providers"):
        assert create_provider(settings(llm_provider="none", anthropic_api_key=SECRET)) is None
    assert [r.getMessage() for r in caplog.records] == [NO_LLM_MESSAGE]


async def test_key_in_the_environment_selects_anthropic(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    s = Settings()
    assert SECRET not in repr(s) and SECRET not in str(s.model_dump())
    with caplog.at_level(logging.DEBUG):
        provider = create_provider(s)
    assert isinstance(provider, AnthropicProvider)
    assert provider.model == "claude-haiku-4-5"
    assert SECRET not in caplog.text
    assert "anthropic" in caplog.text
    await provider.aclose()


async def test_tiny_llm_model_id_overrides_the_model() -> None:
    provider = create_provider(settings(anthropic_api_key=SECRET,
                                        memory_tiny_llm_model_id="claude-haiku-5-5"))
    assert isinstance(provider, AnthropicProvider) and provider.model == "claude-haiku-5-5"
    await provider.aclose()


async def test_llm_provider_bedrock_selects_bedrock() -> None:
    provider = create_provider(settings(llm_provider="bedrock"))
    assert isinstance(provider, BedrockProvider)
    assert provider.model == "amazon.nova-micro-v1:0"
    await provider.aclose()


def test_anthropic_without_a_key_is_a_config_error() -> None:
    with pytest.raises(LLMConfigError):
        create_provider(settings(llm_provider="anthropic"))


def test_blank_key_counts_as_no_key() -> None:
    assert create_provider(settings(anthropic_api_key="  ")) is None


async def test_without_a_provider_the_rules_answer_and_nothing_is_counted() -> None:
    llm = GuardedLLM.from_settings(Settings())
    t = turn("I adopted a dog named Luna yesterday. She is 3 years old.")
    before = sum(s.value for m in LLM_CALLS.collect() for s in m.samples if s.name.endswith("_total"))

    assert await llm.trigger(t) == rules_trigger(t)
    assert await llm.extract(t) == RulesExtractor().extract(t)
    assert await llm.same_fact("Luna is 3.", "Luna is 4.") is same_fact_heuristic(
        "Luna is 3.", (), "Luna is 4.", ())

    after = sum(s.value for m in LLM_CALLS.collect() for s in m.samples if s.name.endswith("_total"))
    assert after == before
    await llm.aclose()


async def test_same_fact_without_heuristics_keeps_both() -> None:
    llm = GuardedLLM(None, settings(memory_enable_entity_heuristics=False))
    assert await llm.same_fact("Caroline has a dog named Luna.", "Caroline has a dog named Luna.") is False


async def test_llm_provider_openai_for_a_local_server_needs_no_key() -> None:
    from streams.providers.llm import OpenAIProvider
    from streams.providers.llm.openai_provider import ResponseFormat

    provider = create_provider(settings(llm_provider="openai", openai_base_url="http://127.0.0.1:8080/v1",
                                        llm_model="smollm2", openai_response_format="json_object"))
    assert isinstance(provider, OpenAIProvider)
    assert (provider.model, provider.form, provider.models) == ("smollm2", ResponseFormat.json_object, {})
    await provider.aclose()


def test_llm_provider_openai_without_key_or_base_url_is_a_config_error() -> None:
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        create_provider(settings(llm_provider="openai"))


def test_auto_never_picks_openai_for_a_stray_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-stray")
    assert create_provider(Settings()) is None
