"""Any OpenAI-compatible chat completions server (OpenAI, Ollama, vLLM, llama.cpp, LM Studio),
with the official async `openai` SDK.

The answer's JSON is asked for in the strongest form the server takes (`ResponseFormat`):
structured output (`json_schema`), else JSON mode (`json_object`, with the schema alongside for
servers such as llama.cpp that turn it into a grammar), else the prompt alone. Under `auto` a
server that refuses `json_schema` (4xx, or llama.cpp's 500) is asked again at once in JSON mode,
and from then on only in JSON mode. Whatever the form, the caller validates the answer.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from enum import Enum
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from streams.providers.llm.base import Task, max_tokens
from streams.providers.llm.errors import (
    LLMError,
    LLMInvalidOutput,
    LLMRequestError,
    LLMServerError,
    sdk_error,
)
from streams.providers.llm.metrics import LLM_TOKENS
from streams.providers.llm.structured import json_schema

log = logging.getLogger(__name__)

LOCAL_API_KEY = "unused"
"""What the SDK is given when the server wants no key (it refuses to build a client without one)."""


class ResponseFormat(str, Enum):
    """How a request asks for JSON (`OPENAI_RESPONSE_FORMAT`)."""

    auto = "auto"
    json_schema = "json_schema"
    json_object = "json_object"
    none = "none"


def response_format(form: ResponseFormat, task: Task, turns: int = 1) -> dict[str, Any] | None:
    """The `response_format` of a request for `task` about `turns` turns in `form` (None: not
    sent)."""
    if form is ResponseFormat.none:
        return None
    schema = json_schema(task, turns)
    if form is ResponseFormat.json_object:
        # `schema` is llama.cpp's extension of JSON mode; other servers ignore the extra key.
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema",
            "json_schema": {"name": f"memstream_{task.value}", "schema": schema, "strict": False}}


def _refused_format(exc: LLMError) -> bool:
    """Whether an error to a `json_schema` request may be the server refusing the form itself."""
    return isinstance(exc, (LLMRequestError, LLMServerError))


class OpenAIProvider:
    """`LLMProvider` over `AsyncOpenAI`'s chat completions.

    Two views of one client, as for Anthropic: the trigger's never retries, the other tasks'
    retry with the SDK's backoff, cut short by the caller's budget. `models` names a model per
    task; a task not in it uses `model`.
    """

    name = "openai"

    def __init__(self, client: AsyncOpenAI, model: str, *, models: Mapping[Task, str] | None = None,
                 form: ResponseFormat = ResponseFormat.auto, max_retries: int = 2) -> None:
        self.model = model
        self.models = dict(models or {})
        self.form = form
        self._client = client
        self._hot = client.with_options(max_retries=0)
        self._cold = client.with_options(max_retries=max_retries)

    @classmethod
    def build(cls, *, model: str, base_url: str | None = None, api_key: str = "",
              models: Mapping[Task, str] | None = None, form: ResponseFormat = ResponseFormat.auto,
              max_retries: int = 2) -> OpenAIProvider:
        """A provider with its own client (the key stays inside the SDK client)."""
        client = AsyncOpenAI(api_key=api_key or LOCAL_API_KEY, base_url=base_url, max_retries=0)
        return cls(client, model, models=models, form=form, max_retries=max_retries)

    @property
    def sends_schema(self) -> bool:
        """Every form but `none` carries the task's JSON schema (`response_format`)."""
        return self.form is not ResponseFormat.none

    def model_of(self, task: Task) -> str:
        """The model asked for `task`."""
        return self.models.get(task, self.model)

    async def complete(self, task: Task, system: str, user: str, *, timeout_s: float,
                       turns: int = 1) -> str:
        if self.form is not ResponseFormat.auto:
            return await self._complete(task, system, user, self.form, timeout_s=timeout_s, turns=turns)
        try:  # no retries while the form is in doubt: a refusal is no transient failure
            return await self._complete(task, system, user, ResponseFormat.json_schema,
                                        timeout_s=timeout_s, turns=turns, retry=False)
        except LLMError as exc:
            if not _refused_format(exc):
                raise
        answer = await self._complete(task, system, user, ResponseFormat.json_object,
                                      timeout_s=timeout_s, turns=turns)
        if self.form is ResponseFormat.auto:
            self.form = ResponseFormat.json_object
            log.info("LLM server refused json_schema output; asking for json_object from now on")
        return answer

    async def _complete(self, task: Task, system: str, user: str, form: ResponseFormat, *,
                        timeout_s: float, turns: int = 1, retry: bool = True) -> str:
        client = self._cold if retry and task is not Task.trigger else self._hot
        extra: dict[str, Any] = {}
        if (fmt := response_format(form, task, turns)) is not None:
            extra["response_format"] = fmt
        try:
            completion = await client.chat.completions.create(
                model=self.model_of(task), max_tokens=max_tokens(task, turns), temperature=0.0,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                timeout=timeout_s, **extra,
            )
        except openai.OpenAIError as exc:
            raise sdk_error("openai", openai, exc) from exc
        return self._text(task, completion)

    def _text(self, task: Task, completion: Any) -> str:
        """The answer's text; tokens counted whatever it holds.

        The SDK does not validate answers: a server's HTML error page comes back as a `str`, a
        JSON body of another shape as a `ChatCompletion` of `None`s. Both are invalid output.
        """
        if not isinstance(completion, ChatCompletion):
            raise LLMInvalidOutput("openai answer is not a chat completion")
        if (usage := completion.usage) is not None:
            LLM_TOKENS.labels(self.name, task.value, "in").inc(usage.prompt_tokens or 0)
            LLM_TOKENS.labels(self.name, task.value, "out").inc(usage.completion_tokens or 0)
        choice = completion.choices[0] if completion.choices else None
        if choice is None or choice.message is None:
            raise LLMInvalidOutput("openai answer without a message")
        if choice.finish_reason == "length":
            raise LLMInvalidOutput("openai answer cut at max_tokens")
        if not isinstance(choice.message.content, str) or not choice.message.content:
            raise LLMInvalidOutput("openai answer without content (refusal or tool call)")
        return choice.message.content

    async def aclose(self) -> None:
        await self._client.close()
