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


class Conflict(ApiError):
    """409: the Idempotency-Key was used for another write; nothing of this one was done."""


class Rejected(ApiError):
    """422: the worker refused the write when it applied it (the edit's text breaks the write
    policy, the memory was purged, ...); `reasons` are the refused commands' reasons."""

    def __init__(self, status: int, message: str, retry_after: float | None = None,
                 reasons: list[str] | None = None) -> None:
        super().__init__(status, message, retry_after)
        self.reasons = list(reasons or [])


class RateLimited(ApiError):
    """429: too many requests (with this key, or event streams); retry after `retry_after` s."""


class Unavailable(ApiError):
    """503: the worker is recovering or the user's partition is moving; retry shortly."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest, 413: InvalidRequest, 401: AuthenticationError, 403: PermissionDenied,
    404: NotFound, 409: Conflict, 422: Rejected, 429: RateLimited, 503: Unavailable,
}


def api_error(status: int, message: str, retry_after: float | None = None) -> ApiError:
    """The named error of an error answer."""
    return _BY_STATUS.get(status, ApiError)(status, message, retry_after)


class ApplyTimeout(ClientError):
    """What was sent was not applied within the wait: a turn whose facts the worker had not all
    handled (`turns`: their (user_id, thread_id, turn_id)), or a registry write still accepted,
    not applied. Nothing is lost: it is applied later (a turn acknowledged by the broker stays
    there); wait longer, or read it back later."""

    def __init__(self, turns: list[tuple[str, str, str]], timeout: float, what: str = "") -> None:
        names = ", ".join(f"{u}/{t}:{n}" for u, t, n in turns[:5])
        super().__init__(what or f"not applied within {timeout:g}s: {names}"
                         f"{' …' if len(turns) > 5 else ''}")
        self.turns = turns
        self.timeout = timeout
