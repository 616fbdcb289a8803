"""Named errors of `memory.query`; each carries the HTTP status the API answers with."""
from __future__ import annotations

from streams.errors import MemstreamError


class QueryError(MemstreamError):
    """A query that cannot be answered as asked. The message is safe to show to the caller;
    `status` and `code` are the HTTP answer's (`streams.api.views.error`)."""

    status = 400
    code = "invalid_request"


class InvalidQuery(QueryError):
    """Malformed, out of range, or a filter the server cannot apply (400)."""


class QueryForbidden(QueryError):
    """An unknown agent, a category outside the agent's allowlist, or another agent's key (403)."""

    status = 403
    code = "forbidden"


class CategoriesConfigError(MemstreamError):
    """The categories YAML is missing or invalid; the worker refuses to serve queries on it.

    The message names the file by its name only (never its directory) and says what is wrong;
    an HTTP answer shows neither (`streams.api.views.coded_errors`)."""
