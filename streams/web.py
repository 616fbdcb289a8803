"""HTTP API of the worker (Faust web): health, metrics, OpenAPI, the admin page, and the
per-user query; the registry (streams/web_registry.py) and SSE (streams/sse.py) register here.

Every route but /health and the admin page's files needs an API key (streams/auth.py). User
routes are routed to the worker that owns the user's partition, so any worker can receive any
request.
"""
from __future__ import annotations

import time
from pathlib import Path

from aiohttp import web
from faust.web import Request, Response, View

from agents.dedup import index_cache, state
from streams import auth, metrics, openapi, ranking
from streams.app import app, settings, users_table
from streams.delta import render_delta
from streams.query import rank, related_bullets
from streams.services import embed

auth.install(app.web.web_app, auth.KeyRing.from_settings(settings))
import streams.sse  # noqa: E402,F401 - registers the SSE route and its agent
import streams.web_registry  # noqa: E402,F401 - registers the registry routes

ADMIN_DIR = Path(__file__).parent / "admin"

WEIGHTS = ranking.RankWeights(
    similarity=settings.rank_w_similarity, importance=settings.rank_w_importance,
    recency=settings.rank_w_recency, pinned=settings.rank_w_pinned,
    related=settings.rank_w_related, half_life_days=settings.recency_half_life_days,
)


def _recovered() -> bool:
    recovery = app.tables.recovery
    return bool(recovery.completed.is_set()) and not app.rebalancing


@app.page("/health")
class Health(View):
    """Liveness and readiness: `ready` once tables are recovered and partitions assigned."""

    async def get(self, request: Request) -> Response:
        ready = _recovered()
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


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}")
    return value


@app.page("/v1/users/{user_id}/query")
class UserQuery(View):
    """GET ?q=text&top_k=n: the user's top-k memories for `q`, ranked, with provenance."""

    @app.table_route(table=users_table, match_info="user_id")
    async def get(self, request: Request, user_id: str) -> Response:
        started = time.perf_counter()
        text = request.query.get("q", "").strip()
        if not text:
            return self.json({"error": "q (the query text) is required"}, status=400)
        if len(text) > settings.max_turn_chars:
            return self.json({"error": "q is too long"}, status=400)
        try:
            top_k = _int_param(request, "top_k", settings.memory_k, 1, settings.query_max_top_k)
        except ValueError as exc:
            return self.json({"error": str(exc)}, status=400)
        if not _recovered():
            return self.json({"error": "recovering, retry shortly"}, status=503)
        thread_id = request.query.get("thread_id")
        try:
            since_rev = _int_param(request, "since_rev", -1, 0, 2**62)
        except ValueError as exc:
            return self.json({"error": str(exc)}, status=400)
        if since_rev >= 0 and not thread_id:
            return self.json({"error": "since_rev needs thread_id"}, status=400)
        vector = (await embed([text]))[0]
        index = index_cache.ensure().user(user_id)
        hits = rank(index, vector, top_k=top_k, candidates=settings.memory_context_topk, weights=WEIGHTS)
        body: dict = {"user_id": user_id,
                      "items": [{**h.as_item(), "related": related_bullets(index, h.memory)} for h in hits]}
        if since_rev >= 0 and thread_id:
            current = state()
            changes = current.changes_since(user_id, thread_id, since_rev)
            body["delta"] = {"rev": current.current_rev(user_id, thread_id),
                             "header": render_delta(since_rev, changes)}
        metrics.QUERY_SECONDS.observe(time.perf_counter() - started)
        return self.json(body)


@app.page("/v1/users/{user_id}/owner")
class UserOwner(View):
    """GET: which worker holds the user's partition (answered by that worker)."""

    @app.table_route(table=users_table, match_info="user_id")
    async def get(self, request: Request, user_id: str) -> Response:
        return self.json({"user_id": user_id, "host": settings.web_host, "port": settings.web_port})
