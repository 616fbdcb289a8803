"""Which LLM provider the settings ask for, if any (docs/architecture.md#llm: no LLM by default, rules instead)."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from streams.providers.llm.base import LLMProvider
from streams.providers.llm.errors import LLMConfigError
from streams.settings import Settings

if TYPE_CHECKING:  # imported when asked for: their SDKs are slow to import (see __init__)
    from streams.providers.llm.anthropic_provider import AnthropicProvider
    from streams.providers.llm.bedrock_provider import BedrockProvider
    from streams.providers.llm.openai_provider import OpenAIProvider

log = logging.getLogger(__name__)

NO_LLM_MESSAGE = "no LLM configured: using rules for trigger, extraction and same-fact"


def _model(settings: Settings, default: str) -> str:
    """The model every task asks: LLM_MODEL, else MEMORY_TINY_LLM_MODEL_ID, else the provider's."""
    return settings.llm.llm_model or settings.llm.memory_tiny_llm_model_id or default


def _anthropic_key(settings: Settings) -> str:
    """The API key, "" when unset (the value never leaves the SDK client and this function)."""
    return settings.llm.anthropic_api_key.get_secret_value().strip() if settings.llm.anthropic_api_key else ""


def _anthropic(settings: Settings) -> AnthropicProvider:
    from streams.providers.llm.anthropic_provider import AnthropicProvider

    key = _anthropic_key(settings)
    if not key:
        raise LLMConfigError("LLM_PROVIDER=anthropic needs ANTHROPIC_API_KEY")
    return AnthropicProvider.build(
        api_key=key, model=_model(settings, settings.llm.anthropic_model),
        base_url=settings.llm.anthropic_base_url, max_retries=settings.llm.llm_max_retries,
    )


def _bedrock(settings: Settings) -> BedrockProvider:
    from streams.providers.llm.bedrock_provider import BedrockProvider

    return BedrockProvider.build(
        model=_model(settings, settings.llm.bedrock_model_id),
        region=settings.aws.aws_region, trigger_timeout_s=settings.write.trigger_budget_ms / 1000,
        timeout_s=max(settings.llm.llm_extract_budget_ms, settings.llm.llm_same_fact_budget_ms) / 1000,
        max_retries=settings.llm.llm_max_retries,
    )


def _openai(settings: Settings) -> OpenAIProvider:
    from streams.providers.llm.base import Task
    from streams.providers.llm.openai_provider import OpenAIProvider, ResponseFormat

    llm = settings.llm
    key = llm.openai_api_key.get_secret_value().strip() if llm.openai_api_key else ""
    if not key and not llm.openai_base_url:
        raise LLMConfigError("LLM_PROVIDER=openai needs OPENAI_API_KEY, or OPENAI_BASE_URL for a local server")
    per_task = {Task.trigger: llm.llm_model_trigger, Task.extract: llm.llm_model_extract,
                Task.same_fact: llm.llm_model_same_fact, Task.consolidate: llm.llm_model_lifecycle,
                Task.insight: llm.llm_model_lifecycle}
    return OpenAIProvider.build(
        model=_model(settings, llm.openai_model), base_url=llm.openai_base_url, api_key=key,
        models={task: model for task, model in per_task.items() if model},
        form=ResponseFormat(llm.openai_response_format), max_retries=llm.llm_max_retries,
    )


def provider_choice(settings: Settings) -> str:
    """The provider `LLM_PROVIDER` names, `auto` resolved: anthropic, bedrock, openai or none."""
    choice = settings.llm.llm_provider
    if choice == "auto":
        return "anthropic" if _anthropic_key(settings) else "none"
    return choice


def defers_extraction(settings: Settings) -> bool:
    """Whether the enrich stage asks the model, not ingest (`GuardedLLM.defers_extraction`)."""
    return (provider_choice(settings) != "none" and settings.llm.llm_mode == "hybrid"
            and settings.llm.llm_extraction == "deferred")


def create_provider(settings: Settings) -> LLMProvider | None:
    """The configured provider, or None (the rules answer everything).

    `LLM_PROVIDER`: `auto` (default) picks Anthropic when `ANTHROPIC_API_KEY` is set, else none;
    `anthropic`, `bedrock`, `openai` and `none` choose explicitly. `LLM_MODEL` (or
    `MEMORY_TINY_LLM_MODEL_ID`, seed 002), when set, overrides the provider's model. Raises
    `LLMConfigError` for `anthropic` without a key, `openai` without a key or a base URL.
    """
    choice = provider_choice(settings)
    if choice == "none":
        log.info(NO_LLM_MESSAGE)
        return None
    build = {"anthropic": _anthropic, "bedrock": _bedrock, "openai": _openai}[choice]
    provider: AnthropicProvider | BedrockProvider | OpenAIProvider = build(settings)
    log.info("LLM provider %s (model %s) for trigger, extraction and same-fact; rules on failure",
             provider.name, provider.model)
    return provider
