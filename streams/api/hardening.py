"""The worker's HTTP server at its edges, where requests are answered by aiohttp or Faust
rather than by memstream's routes: every error answer is JSON, Faust's own views answer only an
admin key for every user and do not fail on a table that does not exist, a request aiohttp
cannot parse is logged without its text, and every answer carries the browser security headers
(`SECURITY_HEADERS`).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from streams.api import auth
from streams.api.views import Handler, Middleware, error

if TYPE_CHECKING:
    from streams.app.factory import MemstreamApp

SERVER_LOGGER = "aiohttp.server"

SECURITY_HEADERS = {
    # The admin page loads its script and style from /admin/static and talks to this origin
    # only; nothing may be inline, framed (clickjacking its buttons) or loaded from elsewhere.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """aiohttp answers its own errors (no such route, method not allowed, body too large) in
    plain text; this API answers every error as JSON `{"error": ...}`."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {k: v for k, v in exc.headers.items()
                   if k.lower() not in ("content-type", "content-length")}
        return web.json_response({"error": exc.reason}, status=exc.status, headers=headers)


FAUST_VIEW_PREFIXES = ("/router/", "/table/")
"""Faust's own views (besides its index, `/`): partition routing and raw table entries."""


def is_faust_view(path: str) -> bool:
    """Whether `path` is one of Faust's own views rather than a route of memstream's."""
    return path == "/" or path.startswith(FAUST_VIEW_PREFIXES)


def faust_views_guard(app: MemstreamApp) -> Middleware:
    """Faust's views answer only an admin key for every user: `/table/{name}/{key}/` shows any
    entry of any table and `/table/lifecycle/...` lists user ids, with nothing to tell whose,
    so a key limited to some users (which the auth middleware lets through as an admin) gets a
    403 (docs/decisions.md#faust-views-admin-for-every-user). And a table that does
    not exist, which Faust answers with a 500 (KeyError) or a 503 "try again later", is a 404."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not is_faust_view(request.path):
            return await handler(request)
        principal = request.get(auth.PRINCIPAL)
        if principal is None or not principal.is_admin or principal.users is not None:
            return error(403, "Faust's views need an admin key for every user")
        name = request.match_info.get("name")
        if name is not None and name not in app.faust.tables:
            return error(404, "no such table")
        return await handler(request)

    return guard


class ContentFreeParseErrors(logging.Filter):
    """aiohttp logs a request it cannot parse (a request line over 8190 bytes, a malformed
    header) at ERROR with a traceback quoting the raw line, a query's text included. Such a
    record keeps its place in the log as a warning naming only the error's type."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg, record.args, record.exc_info = (
                "refused an HTTP request that could not be parsed (%s)", (type(exc).__name__,), None)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_PARSE_ERRORS = ContentFreeParseErrors()


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Add `SECURITY_HEADERS` to an answer as it is prepared: a signal rather than a middleware,
    so streamed answers (server-sent events, files) and error answers carry them too."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)


def install(app: MemstreamApp) -> None:
    """Put the JSON errors first (they wrap the auth middleware's answers too) and the Faust
    views' guard last (after auth), add the security headers to every answer, and filter
    aiohttp's log of unparseable requests."""
    web_app = app.faust.web.web_app
    web_app.middlewares.insert(0, json_errors)
    web_app.middlewares.append(faust_views_guard(app))
    web_app.on_response_prepare.append(security_headers)
    logger = logging.getLogger(SERVER_LOGGER)
    if _PARSE_ERRORS not in logger.filters:
        logger.addFilter(_PARSE_ERRORS)
