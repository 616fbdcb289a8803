"""Claude (Haiku) over the Anthropic Messages API, with the official async SDK."""
from __future__ import annotations

from typing import Any

import anthropic
from anthropic import AsyncAnthropic

from streams.providers.llm.base import Task, max_tokens
from streams.providers.llm.errors import LLMError, LLMInvalidOutput, sdk_error
from streams.providers.llm.metrics import LLM_TOKENS

# Spans carry metadata only, whatever ANTHROPIC_OPEN_TELEMETRY_* says: prompts hold user text,
# and secrets and PII never reach traces (docs/architecture.md#bad-input).
_TELEMETRY: Any = {"traces": {"enabled": True, "content_mode": "metadata_only"}}


def _mapped(exc: anthropic.AnthropicError) -> LLMError:
    """The named memstream error of an SDK error (its `reason` labels the fallback)."""
    return sdk_error("anthropic", anthropic, exc)


class AnthropicProvider:
    """`LLMProvider` over `AsyncAnthropic`.

    Two views of one client (one connection pool): the trigger's never retries; the classifier's
    and the same-fact check's retry with the SDK's exponential backoff (0.5 s, 1 s, … plus jitter,
    honouring retry-after), cut short by the caller's budget.
    """

    name = "anthropic"
    sends_schema = False
    """The JSON shape is told by the prompt alone (no structured output asked)."""

    def __init__(self, client: AsyncAnthropic, model: str, *, max_retries: int = 2) -> None:
        self.model = model
        self._client = client
        self._hot = client.with_options(max_retries=0)
        self._cold = client.with_options(max_retries=max_retries)

    @classmethod
    def build(cls, *, api_key: str, model: str, base_url: str | None = None,
              max_retries: int = 2) -> AnthropicProvider:
        """A provider with its own client (the key stays inside the SDK client)."""
        client = AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0,
                                open_telemetry=_TELEMETRY)
        return cls(client, model, max_retries=max_retries)

    async def complete(self, task: Task, system: str, user: str, *, timeout_s: float,
                       turns: int = 1) -> str:
        client = self._hot if task is Task.trigger else self._cold
        try:
            message = await client.messages.create(
                model=self.model, max_tokens=max_tokens(task, turns), system=system,
                messages=[{"role": "user", "content": user}], timeout=timeout_s,
            )
        except anthropic.AnthropicError as exc:
            raise _mapped(exc) from exc
        if (usage := getattr(message, "usage", None)) is not None:
            LLM_TOKENS.labels(self.name, task.value, "in").inc(usage.input_tokens or 0)
            LLM_TOKENS.labels(self.name, task.value, "out").inc(usage.output_tokens or 0)
        if message.stop_reason == "max_tokens":
            raise LLMInvalidOutput("anthropic answer cut at max_tokens")
        return "".join(block.text for block in message.content if block.type == "text")

    async def aclose(self) -> None:
        await self._client.close()
