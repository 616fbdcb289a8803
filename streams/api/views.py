"""The base of memstream's web views: the app they serve, and the answers they share."""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from aiohttp import web
from faust.web import View

from streams.api.state import WebState
from streams.app.factory import MemstreamApp

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Middleware = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]


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
        return web.json_response({"error": "recovering, retry shortly"}, status=503,
                                 headers={"Retry-After": "1"})


def error(status: int, message: str) -> web.Response:
    """A JSON error answer; the message is safe to show the caller."""
    return web.json_response({"error": message}, status=status)


def add_views(app: MemstreamApp, routes: dict[str, type[View]]) -> None:
    """Register each view class at its path on `app`'s web server.

    Faust's `app.page` stamps the path and name on the class it registers; a subclass per app
    keeps two apps in one process (tests, tools) from sharing them.
    """
    for path, view in routes.items():
        app.faust.page(path)(type(view.__name__, (view,), {"__doc__": view.__doc__}))
