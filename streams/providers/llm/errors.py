"""Named errors of the LLM providers. Each carries `reason`, the label of the fallback counter."""
from __future__ import annotations

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
