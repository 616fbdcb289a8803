"""Named errors of `memory.query`; each carries the HTTP status the API answers with."""
from __future__ import annotations

from streams.errors import MemstreamError


class QueryError(MemstreamError):
    """A query that cannot be answered as asked. The message is safe to show to the caller."""

    status = 400


class InvalidQuery(QueryError):
    """Malformed, out of range, or a filter the server cannot apply (400)."""


class QueryForbidden(QueryError):
    """An unknown agent, a category outside the agent's allowlist, or another agent's key (403)."""

    status = 403


class CategoriesConfigError(MemstreamError):
    """The categories YAML is missing or invalid; the worker refuses to serve queries on it."""
