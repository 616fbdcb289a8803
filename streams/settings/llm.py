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
    llm_provider: Literal["auto", "anthropic", "bedrock", "openai", "none"] = Field(
        "auto",
        description="auto: Anthropic when ANTHROPIC_API_KEY is set, else rules (never openai: a "
        "stray OPENAI_API_KEY must not send turns anywhere); anthropic, bedrock, openai (any "
        "OpenAI-compatible server: OpenAI, Ollama, vLLM, llama.cpp, LM Studio) or none (rules) to "
        "choose explicitly ([llm.md](llm.md)).",
    )
    llm_mode: Literal["hybrid", "replace"] = Field(
        "hybrid",
        description="hybrid: the rules always run and the model adds to them (trigger: either may "
        "say yes; extraction: both fact sets, deduplicated); replace: the model's answer stands "
        "alone, the rules answer only when it fails.",
    )
    llm_model: str | None = Field(
        None, description="The model of every LLM task, for any provider (wins over "
        "MEMORY_TINY_LLM_MODEL_ID); unset: the provider's default.",
    )
    llm_model_trigger: str | None = Field(None, description="openai: the trigger's model (unset: LLM_MODEL).")
    llm_model_extract: str | None = Field(
        None, description="openai: the classifier's model (unset: LLM_MODEL).")
    llm_model_same_fact: str | None = Field(
        None, description="openai: the same-fact check's model (unset: LLM_MODEL).")
    llm_model_lifecycle: str | None = Field(
        None, description="openai: the model of consolidation and insights (unset: LLM_MODEL).")
    anthropic_api_key: SecretStr | None = Field(None, description="Anthropic API key; never logged.")
    anthropic_base_url: str | None = Field(None, description="Anthropic API base URL (proxies, tests).")
    anthropic_model: str = Field(
        "claude-haiku-4-5",
        description="Anthropic model. Not claude-3-5-haiku-latest: it reached end-of-life on 19 Feb 2026.",
    )
    bedrock_model_id: str = Field("amazon.nova-micro-v1:0", description="Bedrock Converse model id.")
    openai_base_url: str | None = Field(
        None, description="Base URL of the OpenAI-compatible API, up to /v1 (e.g. "
        "http://localhost:11434/v1 for Ollama); unset: api.openai.com.",
    )
    openai_api_key: SecretStr | None = Field(
        None, description="API key of the OpenAI-compatible server; never logged. Local servers "
        "need none.",
    )
    openai_model: str = Field("gpt-4o-mini", description="openai: the model when LLM_MODEL is unset.")
    openai_response_format: Literal["auto", "json_schema", "json_object", "none"] = Field(
        "auto",
        description="How the answer's JSON is asked for: json_schema (structured output), "
        "json_object (JSON mode, the schema passed along for servers that constrain with it), "
        "none (the prompt alone); auto: json_schema, and json_object from the first refusal on. "
        "Every answer is validated either way.",
    )
    llm_batch_turns: int = Field(
        8, ge=1, le=16, description="Turns of one thread the trigger or extraction asks about in "
        "one LLM call at most, when ingest has several at once (a backlog; each keeps its own "
        "answer, a turn the answer misses is the rules'); 1: a call a turn.",
    )
    llm_extraction: Literal["deferred", "inline"] = Field(
        "deferred",
        description="hybrid: when the model is asked about a turn. deferred: ingest stores the "
        "rules' facts at once and the enrich stage asks the model about the turns of the last "
        "LLM_WINDOW_SECONDS together, a thread's turns in one call (its facts follow as more "
        "candidates); inline: ingest asks before the turn's candidates go (its latency and a "
        "call a turn in a live chat). replace mode is always inline.",
    )
    llm_window_seconds: float = Field(
        120.0, ge=0.05, le=3600, description="deferred: how long the enrich stage gathers turns "
        "before it asks the model about them (a chat's turns in one call; they are committed "
        "only once asked, so a restart asks again).",
    )
    llm_window_turns: int = Field(
        256, ge=1, le=4096, description="deferred: the most turns the enrich stage gathers "
        "before it asks, whatever the time.",
    )
    llm_max_concurrent_calls: int = Field(
        4, ge=1, le=256, description="LLM calls in flight at once, per worker, every task "
        "together; more wait for a slot (outside their budget). A local server answers one at "
        "a time: a window of many threads must not time them all out.",
    )
    llm_extract_budget_ms: int = Field(2000, ge=1, description="Time budget of an LLM classifier call.")
    llm_same_fact_budget_ms: int = Field(1500, ge=1, description="Time budget of an LLM same-fact call.")
    llm_query_budget_ms: int = Field(
        1500, ge=1, description="Time budget of the read path's LLM call: the searches a "
        "question that combines facts needs (QUERY_MODEL_PARTS); past it the rules' parts answer.",
    )
    llm_lifecycle_budget_ms: int = Field(
        10000, ge=1, description="Time budget of a background LLM call (consolidation summary, "
        "theory-of-mind insights); never on the hot path.",
    )
    llm_max_retries: int = Field(
        2, ge=0, description="Retries of classifier and same-fact calls within their budget; the "
        "trigger never retries.",
    )
