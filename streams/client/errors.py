"""The client's named errors, under `ClientError` (itself a `streams.errors.MemstreamError`)."""
from __future__ import annotations

from streams.errors import MemstreamError


class ClientError(MemstreamError):
    """Root of the client's errors."""


class ConfigurationError(ClientError):
    """The client lacks what a call needs (a broker for turns, an API URL for queries)."""


class ProduceError(ClientError):
    """A turn could not be produced: the broker is unreachable or refused the record."""


class ConsumeError(ClientError):
    """A topic could not be consumed (the broker is unreachable)."""


class ApiUnreachable(ClientError):
    """The API could not be reached, or did not answer in time."""


class ApiError(ClientError):
    """The API answered with an error: `status`, the API's `message`, and for 429 and 503 the
    seconds it asked the client to wait (`retry_after`)."""

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.retry_after = retry_after


class InvalidRequest(ApiError):
    """400 or 413: the request (or its body's size) is not valid; the message says why."""


class AuthenticationError(ApiError):
    """401: the API key is missing or not valid."""


class PermissionDenied(ApiError):
    """403: the API key may not do this (another user, a category outside its allowlist)."""


class NotFound(ApiError):
    """404: no such route, user item or command."""


class RateLimited(ApiError):
    """429: too many requests (with this key, or event streams); retry after `retry_after` s."""


class Unavailable(ApiError):
    """503: the worker is recovering or the user's partition is moving; retry shortly."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest, 413: InvalidRequest, 401: AuthenticationError, 403: PermissionDenied,
    404: NotFound, 429: RateLimited, 503: Unavailable,
}


def api_error(status: int, message: str, retry_after: float | None = None) -> ApiError:
    """The named error of an error answer."""
    return _BY_STATUS.get(status, ApiError)(status, message, retry_after)
