"""HTTP API of the worker (Faust web): health, metrics, OpenAPI, the admin page, and the
per-user query; the registry (streams/web_registry.py) and SSE (streams/sse.py) register here.

Every route but /health and the admin page's files needs an API key (streams/auth.py). User
routes are routed to the worker that owns the user's partition, so any worker can receive any
request.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

from aiohttp import web
from faust.web import Request, Response, View

from streams.api import auth, openapi
from streams.observability import metrics
from streams.app.factory import app, settings, tables_ready, users_table
from streams.api.query import answer, parse_body, parse_params
from streams.read.errors import CategoriesConfigError, QueryError
from streams.api.routing import route_to_owner
from topics.query import QueryRequest

log = logging.getLogger(__name__)

auth.install(app.web.web_app, auth.KeyRing.from_settings(settings))
import streams.api.sse  # noqa: E402,F401 - registers the SSE route and its agent
import streams.api.registry  # noqa: E402,F401 - registers the registry routes

ADMIN_DIR = Path(__file__).parent / "admin"


@app.page("/health")
class Health(View):
    """Liveness and readiness: `ready` once tables are recovered and partitions assigned."""

    async def get(self, request: Request) -> Response:
        ready = tables_ready()
        partitions = len(app.consumer.assignment()) if ready else 0
        return self.json({"status": "ok", "ready": ready, "partitions": partitions},
                         status=200 if ready else 503)


@app.page("/metrics")
class Metrics(View):
    async def get(self, request: Request) -> Response:
        return self.bytes(metrics.render(), content_type="text/plain; version=0.0.4")


@app.page("/openapi.json")
class OpenApi(View):
    """The OpenAPI 3 description of this API (streams/openapi.py)."""

    async def get(self, request: Request) -> Response:
        return self.json(openapi.build_spec())


@app.page("/admin")
class AdminPage(View):
    """The admin page over the registry API (static; the key is entered in the page)."""

    async def get(self, request: Request) -> Response:
        return web.FileResponse(ADMIN_DIR / "index.html")


app.web.add_static("/admin/static/", ADMIN_DIR / "static")


@app.page("/v1/users/{user_id}/query")
class UserQuery(View):
    """memory.query (SPEC §5): POST a JSON `topics.query.QueryRequest`, or GET ?q=&agent=&….

    Answered by the worker that owns the user: GET is routed by `app.table_route`, POST by
    `route_to_owner` (which forwards the body; faust's router does not).
    """

    @app.table_route(table=users_table, match_info="user_id")
    async def get(self, request: Request, user_id: str) -> Response:
        return await self._answer(request, user_id, lambda: parse_params(
            request.query, request.get("principal")))

    @route_to_owner(app, users_table, "user_id")
    async def post(self, request: Request, user_id: str) -> Response:
        body = await request.read()
        return await self._answer(request, user_id, lambda: parse_body(body))

    async def _answer(self, request: Request, user_id: str,
                      parse: Callable[[], QueryRequest]) -> Response:
        started = time.perf_counter()
        try:
            query = parse()
            if not tables_ready():
                return self.json({"error": "recovering, retry shortly"}, status=503)
            body = await answer(query, user_id, request.get("principal"))
        except QueryError as exc:
            return self.json({"error": str(exc)}, status=exc.status)
        except CategoriesConfigError as exc:
            log.error("queries refused: %s", exc)
            return self.json({"error": f"categories config: {exc}"}, status=503)
        metrics.QUERY_SECONDS.observe(time.perf_counter() - started)
        return self.json(body)


@app.page("/v1/users/{user_id}/owner")
class UserOwner(View):
    """GET: which worker holds the user's partition (answered by that worker)."""

    @app.table_route(table=users_table, match_info="user_id")
    async def get(self, request: Request, user_id: str) -> Response:
        return self.json({"user_id": user_id, "host": settings.web_host, "port": settings.web_port})
