"""The base of memstream's web views: the app they serve, and the answers they share.

Every error answer is JSON `{"error": <a message safe to show>, "code": <a stable code>}`:
`error()` makes one, and `coded_errors`, the outermost middleware, makes sure of it for every
answer of the worker's HTTP server — an error answer made elsewhere without a code gets the
code of its status (`CODES`), one that is not JSON becomes JSON, an unreadable categories file
is a 503 `categories_unavailable` (naming no file), and any other exception a 500
`internal_error` (logged by its type and place, never its message: it can quote the input).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus

from aiohttp import web
from faust.web import View

from streams.api.state import WebState
from streams.app.factory import MemstreamApp
from streams.observability.logs import describe_failure
from streams.read.errors import CategoriesConfigError

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Middleware = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]

CODES: dict[int, str] = {
    400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 408: "request_timeout", 409: "conflict", 411: "length_required",
    413: "body_too_large", 414: "uri_too_long", 415: "unsupported_media_type",
    422: "rejected", 429: "rate_limited", 431: "headers_too_large", 500: "internal_error",
    502: "bad_gateway", 503: "unavailable", 504: "gateway_timeout",
}
"""The code of an error answer by its status, where the answer names none more precise (those
are named where they are answered: `idempotency_key_reused`, `categories_unavailable`, …)."""
CATEGORIES_UNAVAILABLE = "categories_unavailable"
INTERNAL_ERROR = "internal_error"


def code_of(status: int) -> str:
    """The stable code of an error status (`CODES`; another 4xx is `invalid_request`, another
    5xx `internal_error`)."""
    return CODES.get(status) or ("invalid_request" if status < 500 else INTERNAL_ERROR)


class MemstreamView(View):
    """A Faust view that knows the `MemstreamApp` of its worker, and the web layer's state."""

    @property
    def memstream(self) -> MemstreamApp:
        return MemstreamApp.of(self.app)

    @property
    def web_state(self) -> WebState:
        """The hub of SSE clients and the command waiter (`streams.api.state`)."""
        return WebState.of(self.app)

    def not_ready(self) -> web.Response | None:
        """A 503 while the worker's tables are recovering or a rebalance is under way."""
        if self.memstream.tables_ready():
            return None
        return error(503, "recovering, retry shortly", headers={"Retry-After": "1"})


def error(status: int, message: str, code: str | None = None,
          headers: Mapping[str, str] | None = None) -> web.Response:
    """A JSON error answer: the message is safe to show the caller (no input, no server path);
    `code` is stable, for programs (default: the status's, `code_of`)."""
    return web.json_response({"error": message, "code": code or code_of(status)}, status=status,
                             headers=headers)


@web.middleware
async def coded_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error answer JSON with a code (the module's docstring): outermost, so it also sees
    the answers of the auth, limit and hardening middlewares and of Faust's own views."""
    try:
        response = await handler(request)
    except web.HTTPException:
        raise  # below 400 (a redirect): `hardening.json_errors` answers the others as JSON
    except CategoriesConfigError as exc:
        log.error("%s %s refused: the categories file cannot be read: %s", request.method,
                  _route_of(request), exc)
        return error(503, "the categories configuration cannot be read; retry later",
                     CATEGORIES_UNAVAILABLE, headers={"Retry-After": "5"})
    except Exception as exc:  # noqa: BLE001 - every failure is answered as JSON
        log.error("%s %s failed: %s", request.method, _route_of(request), describe_failure(exc))
        return error(500, "internal error", INTERNAL_ERROR)
    if response.status < 400 or not isinstance(response, web.Response) or response.prepared:
        return response  # a streamed answer (events, a file) has its status and body on the wire
    return _coded(response)


def _route_of(request: web.Request) -> str:
    """The route's template (`/v1/users/{user_id}/...`): a log line names no user or id."""
    resource = getattr(getattr(request.match_info, "route", None), "resource", None)
    return resource.canonical if resource is not None else "<no route>"


def _coded(response: web.Response) -> web.Response:
    """An error answer with a `code`: JSON `{"error": ...}` gets its status's code; any other
    body becomes `{"error": <the status's phrase>, "code": ...}` (its text is not shown: it may
    be a library's, naming server paths)."""
    body = response.body if isinstance(response.body, bytes) else None
    payload = None
    if body is not None and response.content_type == "application/json":
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
    if isinstance(payload, dict) and "error" in payload:
        if isinstance(payload.get("code"), str):
            return response
        payload = {**payload, "code": code_of(response.status)}
    else:
        try:
            phrase = HTTPStatus(response.status).phrase
        except ValueError:
            phrase = "error"
        payload = {"error": phrase.lower(), "code": code_of(response.status)}
    headers = {k: v for k, v in response.headers.items()
               if k.lower() not in ("content-type", "content-length", "content-encoding")}
    return web.json_response(payload, status=response.status, headers=headers)


def add_views(app: MemstreamApp, routes: dict[str, type[View]]) -> None:
    """Register each view class at its path on `app`'s web server.

    Faust's `app.page` stamps the path and name on the class it registers; a subclass per app
    keeps two apps in one process (tests, tools) from sharing them.
    """
    for path, view in routes.items():
        app.faust.page(path)(type(view.__name__, (view,), {"__doc__": view.__doc__}))
