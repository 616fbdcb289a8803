"""The worker's HTTP API (Faust web): health, metrics, OpenAPI, the admin page, the per-user
query and owner routes; the registry (`streams.api.registry`) and server-sent events
(`streams.api.sse`) add their own routes.

Every route but /health and the admin page's files needs an API key (`streams.api.auth`); the
key file and the category allowlists are re-read when they change. User routes are answered by
the worker that owns the user's partition (`streams.api.routing`), so any worker can receive any
request. Request rates (per key) and body sizes are limited (`streams.api.limits`), and so are
the connections held and how long a slow or idle one is kept (`streams.api.connections`).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Container, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from aiohttp import web
from faust.web import Request, Response

from streams.api import auth, connections, hardening, limits, openapi, registry, sse
from streams.api.query import answer, parse_body, parse_params
from streams.api.command_waiter import CommandWaiter
from streams.api.routing import route_to_owner
from streams.api.hub import Hub
from streams.api.state import WebState
from streams.api.views import CATEGORIES_UNAVAILABLE, MemstreamView, add_views, coded_errors, error
from streams.observability import metrics
from streams.pipeline.retries import stalled_stages
from streams.read.categories import DEFAULT_PATH, load_policy
from streams.read.errors import CategoriesConfigError, QueryError
from topics.query import QueryRequest

if TYPE_CHECKING:
    from streams.app.factory import MemstreamApp

log = logging.getLogger(__name__)
ADMIN_DIR = Path(__file__).parent / "admin"


class Health(MemstreamView):
    """Liveness and readiness: `ready` once tables are recovered and partitions assigned, and
    while no stage is stalled on a record that fails every retry (`streams.pipeline.retries`)."""

    async def get(self, request: Request) -> Response:
        tables_ready = self.memstream.tables_ready()
        stalled = stalled_stages()
        ready = tables_ready and not stalled
        assignment = self.app.consumer.assignment() if tables_ready else set()
        return self.json({"status": "ok", "ready": ready, "partitions": len(assignment),
                          "assigned": assigned_inputs(assignment, self.app.tables.changelog_topics),
                          "stalled": stalled},
                         status=200 if ready else 503)


def assigned_inputs(assignment: Iterable[Any], changelogs: Container[str]) -> dict[str, list[int]]:
    """The assigned partitions (topic-partition pairs) by topic, changelog topics left out."""
    out: dict[str, list[int]] = {}
    for tp in assignment:
        if tp.topic not in changelogs:
            out.setdefault(tp.topic, []).append(tp.partition)
    return {topic: sorted(parts) for topic, parts in sorted(out.items())}


class Metrics(MemstreamView):
    """Prometheus metrics of this worker."""

    async def get(self, request: Request) -> Response:
        return self.bytes(metrics.render(), content_type="text/plain; version=0.0.4")


class OpenApi(MemstreamView):
    """The OpenAPI 3 description of this API (streams/api/openapi.py)."""

    async def get(self, request: Request) -> Response:
        return self.json(openapi.build_spec())


class AdminPage(MemstreamView):
    """The admin page over the registry API (static; the key is entered in the page)."""

    async def get(self, request: Request) -> Response:
        return web.FileResponse(ADMIN_DIR / "index.html")


@lru_cache(maxsize=1)
def admin_files() -> dict[str, Path]:
    """The admin page's script and style, by name: the only files /admin/static serves."""
    return {path.name: path for path in (ADMIN_DIR / "static").iterdir() if path.is_file()}


class AdminStatic(MemstreamView):
    """One of the admin page's files. (aiohttp's directory server answered a file name longer
    than the file system allows with a 500; a fixed list has no path to resolve.)"""

    async def get(self, request: Request, filename: str) -> web.StreamResponse:
        path = admin_files().get(filename)
        return web.FileResponse(path) if path is not None else error(404, "no such file")


class UserQuery(MemstreamView):
    """memory.query (docs/architecture.md#read-path): POST a JSON `topics.query.QueryRequest`, or GET ?q=&agent=&….

    Answered by the worker that owns the user (`route_to_owner`, which forwards the body).
    """

    @route_to_owner()
    async def get(self, request: Request, user_id: str) -> Response:
        return await self._answer(request, user_id, lambda: parse_params(
            request.query, request.get("principal")))

    @route_to_owner()
    async def post(self, request: Request, user_id: str) -> Response:
        body = await request.read()
        return await self._answer(request, user_id, lambda: parse_body(body))

    async def _answer(self, request: Request, user_id: str,
                      parse: Callable[[], QueryRequest]) -> Response:
        started = time.perf_counter()
        try:
            query = parse()
            if (busy := self.not_ready()) is not None:
                return busy
            body = await answer(self.memstream, query, user_id, request.get("principal"))
        except QueryError as exc:
            return error(exc.status, str(exc), exc.code)
        except CategoriesConfigError as exc:
            # the answer names no file: where the worker keeps its configuration is not the
            # caller's to know (the log says what is wrong)
            log.error("queries refused: %s", exc)
            return error(503, "the categories configuration cannot be read; retry later",
                         CATEGORIES_UNAVAILABLE, headers={"Retry-After": "5"})
        metrics.QUERY_SECONDS.observe(time.perf_counter() - started)
        return self.json(body)


class UserOwner(MemstreamView):
    """GET: which worker holds the user's partition (answered by that worker)."""

    @route_to_owner()
    async def get(self, request: Request, user_id: str) -> Response:
        settings = self.memstream.settings
        return self.json({"user_id": user_id, "host": settings.api.web_host, "port": settings.api.web_port})


ROUTES = {
    "/health": Health,
    "/metrics": Metrics,
    "/openapi.json": OpenApi,
    "/admin": AdminPage,
    "/admin/static/{filename}": AdminStatic,
    "/v1/users/{user_id}/query": UserQuery,
    "/v1/users/{user_id}/owner": UserOwner,
}


def register(app: MemstreamApp, extra_keys: Sequence[auth.KeyEntry] = ()) -> WebState:
    """Add the auth middleware and every route to `app`'s web server (before it starts), with
    the state the routes keep (`streams.api.state`); returns that state, whose `listeners` the
    stages are given.

    `extra_keys` are accepted besides the configured keys (`memstream run`'s dev admin key).
    """
    state = WebState(Hub(app.settings.api.sse_queue_events), CommandWaiter())
    state.attach(app.faust)
    web_app = app.faust.web.web_app
    auth.install(web_app, auth.KeySource.from_settings(app.settings, extra_keys))
    categories = app.settings.read.categories_path or DEFAULT_PATH
    web_app.middlewares.append(auth.reload_on_change(categories, load_policy.cache_clear))
    hardening.install(app)
    connections.install(app)
    limits.install(web_app, app.settings.api)
    web_app.middlewares.insert(0, coded_errors)  # outermost: every error answer JSON with a code
    add_views(app, ROUTES)
    registry.register(app)
    sse.register(app, state.hub)
    return state
