"""Named errors of the LLM providers. Each carries `reason`, the label of the fallback counter."""
from __future__ import annotations

from types import ModuleType

from streams.errors import MemstreamError


class LLMError(MemstreamError):
    """A provider call that gave no usable answer; the caller falls back to the rules."""

    reason = "error"


class LLMTimeout(LLMError):
    """The call did not finish within its time budget (ours, the SDK's or the model's)."""

    reason = "timeout"


class LLMRateLimited(LLMError):
    """The provider throttled us (HTTP 429, Bedrock ThrottlingException)."""

    reason = "rate_limited"


class LLMServerError(LLMError):
    """The provider failed on its side (HTTP 5xx, Bedrock service/model errors)."""

    reason = "server_error"


class LLMRequestError(LLMError):
    """The provider refused the request (other 4xx: auth, validation, unknown model)."""

    reason = "request_error"


class LLMUnavailable(LLMError):
    """The provider could not be reached (connection refused, DNS, TLS)."""

    reason = "unavailable"


class LLMInvalidOutput(LLMError):
    """The answer was not JSON or did not satisfy the task's schema."""

    reason = "invalid_output"


class LLMConfigError(MemstreamError):
    """The LLM settings ask for a provider that cannot be built (e.g. anthropic without a key)."""


def status_error(label: str, status: int) -> LLMError:
    """The named error of an HTTP error answer from provider `label`."""
    if status == 429:
        return LLMRateLimited(f"{label} 429")
    if status in (408, 504):
        return LLMTimeout(f"{label} {status}")
    if status >= 500:
        return LLMServerError(f"{label} {status}")
    return LLMRequestError(f"{label} {status}")


def sdk_error(label: str, sdk: ModuleType, exc: Exception) -> LLMError:
    """The named error of an exception of a Stainless-generated SDK (`anthropic`, `openai`:
    both name their errors alike). Its `reason` labels the fallback; no message is kept, as
    the SDK's may quote the request."""
    if isinstance(exc, sdk.APITimeoutError):
        return LLMTimeout(f"{label} request timed out")
    if isinstance(exc, sdk.APIConnectionError):
        return LLMUnavailable(f"{label} unreachable")
    if isinstance(exc, sdk.APIResponseValidationError):
        return LLMInvalidOutput(f"{label} response did not match the API's schema")
    if isinstance(exc, sdk.APIStatusError):
        return status_error(label, exc.status_code)
    return LLMError(type(exc).__name__)
