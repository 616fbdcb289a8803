"""A Bedrock model (e.g. Amazon Nova Micro) over the Converse API, with boto3.

boto3 is synchronous, so each call runs on a small dedicated thread pool: a slow Bedrock ties up
those threads, never the event loop, and when they are all busy new calls queue and time out into
the rules fallback instead of piling up threads.
"""
from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from streams.providers.llm.base import Task, max_tokens
from streams.providers.llm.errors import (
    LLMError,
    LLMInvalidOutput,
    LLMRateLimited,
    LLMRequestError,
    LLMServerError,
    LLMTimeout,
    LLMUnavailable,
)
from streams.providers.llm.metrics import LLM_TOKENS

_THROTTLED = {"ThrottlingException", "TooManyRequestsException", "ServiceQuotaExceededException"}
_SERVER = {"InternalServerException", "ServiceUnavailableException", "ModelNotReadyException",
           "ModelErrorException"}
THREADS = 8


def _mapped_client_error(exc: ClientError) -> LLMError:
    """The named memstream error of a Bedrock error response."""
    code = exc.response.get("Error", {}).get("Code", "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    if code in _THROTTLED or status == 429:
        return LLMRateLimited(f"bedrock {code or status}")
    if code == "ModelTimeoutException":
        return LLMTimeout("bedrock model timeout")
    if code in _SERVER or status >= 500:
        return LLMServerError(f"bedrock {code or status}")
    return LLMRequestError(f"bedrock {code or status}")


def _mapped(exc: Exception) -> LLMError:
    """The named memstream error of anything boto3 raises."""
    if isinstance(exc, ClientError):
        return _mapped_client_error(exc)
    if isinstance(exc, (ReadTimeoutError, ConnectTimeoutError)):
        return LLMTimeout("bedrock request timed out")
    if isinstance(exc, EndpointConnectionError):
        return LLMUnavailable("bedrock unreachable")
    if isinstance(exc, BotoCoreError):  # missing credentials, bad parameters, ...
        return LLMRequestError(type(exc).__name__)
    return LLMError(type(exc).__name__)


def _text(response: dict[str, Any]) -> str:
    """The text of a Converse response."""
    if response.get("stopReason") == "max_tokens":
        raise LLMInvalidOutput("bedrock answer cut at max_tokens")
    try:
        blocks = response["output"]["message"]["content"]
    except (KeyError, TypeError):
        raise LLMInvalidOutput("bedrock response without output.message.content") from None
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))


class BedrockProvider:
    """`LLMProvider` over a `bedrock-runtime` client's `converse`.

    `client` serves the trigger and should not retry; `cold_client` (default: `client`) serves
    the classifier and the same-fact check and may retry (botocore standard retry mode).
    """

    name = "bedrock"
    sends_schema = False
    """The JSON shape is told by the prompt alone."""

    def __init__(self, model: str, client: Any, *, cold_client: Any | None = None,
                 threads: int = THREADS) -> None:
        self.model = model
        self._hot = client
        self._cold = cold_client or client
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bedrock-llm")

    @classmethod
    def build(cls, *, model: str, region: str, trigger_timeout_s: float, timeout_s: float,
              max_retries: int = 2) -> BedrockProvider:
        """Clients from the default AWS credential chain, with socket timeouts near the budgets
        (so an abandoned call frees its thread soon after its caller gave up)."""
        session = boto3.session.Session()

        def client(attempts: int, seconds: float) -> Any:
            config = Config(retries={"total_max_attempts": attempts, "mode": "standard"},
                            connect_timeout=seconds, read_timeout=seconds)
            return session.client("bedrock-runtime", region_name=region, config=config)

        return cls(model, client(1, trigger_timeout_s),
                   cold_client=client(max_retries + 1, timeout_s))

    async def complete(self, task: Task, system: str, user: str, *, timeout_s: float,
                       turns: int = 1) -> str:
        """The Converse answer. `timeout_s` is enforced by the caller; the clients' socket
        timeouts (set in `build`) only bound how long an abandoned thread stays busy."""
        client = self._hot if task is Task.trigger else self._cold
        call = functools.partial(
            client.converse, modelId=self.model, system=[{"text": system}],
            messages=[{"role": "user", "content": [{"text": user}]}],
            inferenceConfig={"maxTokens": max_tokens(task, turns), "temperature": 0.0},
        )
        try:
            response = await asyncio.get_running_loop().run_in_executor(self._pool, call)
        except (ClientError, BotoCoreError) as exc:
            raise _mapped(exc) from exc
        usage = response.get("usage") if isinstance(response, dict) else None
        if isinstance(usage, dict):
            LLM_TOKENS.labels(self.name, task.value, "in").inc(usage.get("inputTokens") or 0)
            LLM_TOKENS.labels(self.name, task.value, "out").inc(usage.get("outputTokens") or 0)
        return _text(response)

    async def aclose(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
