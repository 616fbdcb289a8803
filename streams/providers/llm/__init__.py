"""Tiny-LLM providers (docs/architecture.md#write-path, §6, docs/llm.md): Anthropic, Bedrock or any
OpenAI-compatible server behind one interface, rules behind them all.

The pipeline uses them through `streams.guarded.llm.GuardedLLM` (built with
`GuardedLLM.from_settings`); its methods always answer, from the model within the time budget or
from the rules.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streams.providers.llm.base import LLMProvider, Task
from streams.providers.llm.errors import (
    LLMConfigError,
    LLMError,
    LLMInvalidOutput,
    LLMRateLimited,
    LLMRequestError,
    LLMServerError,
    LLMTimeout,
    LLMUnavailable,
)
from streams.providers.llm.factory import NO_LLM_MESSAGE, create_provider

if TYPE_CHECKING:
    from streams.providers.llm.anthropic_provider import AnthropicProvider
    from streams.providers.llm.bedrock_provider import BedrockProvider
    from streams.providers.llm.openai_provider import OpenAIProvider

_PROVIDERS = {"AnthropicProvider": "streams.providers.llm.anthropic_provider",
              "BedrockProvider": "streams.providers.llm.bedrock_provider",
              "OpenAIProvider": "streams.providers.llm.openai_provider"}
"""Imported when first named: their SDKs (anthropic, boto3) took half a worker's import time,
and the default worker runs no LLM (openai's likewise)."""


def __getattr__(name: str) -> Any:
    if name in _PROVIDERS:
        import importlib

        return getattr(importlib.import_module(_PROVIDERS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "NO_LLM_MESSAGE",
    "AnthropicProvider",
    "BedrockProvider",
    "LLMConfigError",
    "LLMError",
    "LLMInvalidOutput",
    "LLMProvider",
    "LLMRateLimited",
    "LLMRequestError",
    "LLMServerError",
    "LLMTimeout",
    "LLMUnavailable",
    "OpenAIProvider",
    "Task",
    "create_provider",
]
