"""Settings of one concern: llm (optional) (docs/configuration.md#llm)."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, SecretStr

from streams.settings.section import Section


class LlmSettings(Section):
    """LLM (optional)."""

    title: ClassVar[str] = "LLM (optional)"
    about: ClassVar[str] = (
        'With none, every decision is made by rules. With one, each call has a time budget and '
        'falls back to the rules ([architecture.md](architecture.md#llm)).'
    )

    memory_tiny_llm_model_id: str | None = Field(
        None, description="Overrides the LLM provider's model id (seed 002 name); unset: provider default."
    )
    llm_provider: Literal["auto", "anthropic", "bedrock", "none"] = Field(
        "auto",
        description="auto: Anthropic when ANTHROPIC_API_KEY is set, else rules; anthropic, bedrock "
        "or none (rules) to choose explicitly.",
    )
    anthropic_api_key: SecretStr | None = Field(None, description="Anthropic API key; never logged.")
    anthropic_base_url: str | None = Field(None, description="Anthropic API base URL (proxies, tests).")
    anthropic_model: str = Field(
        "claude-haiku-4-5",
        description="Anthropic model. Not claude-3-5-haiku-latest: it reached end-of-life on 19 Feb 2026.",
    )
    bedrock_model_id: str = Field("amazon.nova-micro-v1:0", description="Bedrock Converse model id.")
    llm_extract_budget_ms: int = Field(2000, ge=1, description="Time budget of an LLM classifier call.")
    llm_same_fact_budget_ms: int = Field(1500, ge=1, description="Time budget of an LLM same-fact call.")
    llm_lifecycle_budget_ms: int = Field(
        10000, ge=1, description="Time budget of a background LLM call (consolidation summary, "
        "theory-of-mind insights); never on the hot path.",
    )
    llm_max_retries: int = Field(
        2, ge=0, description="Retries of classifier and same-fact calls within their budget; the "
        "trigger never retries.",
    )
