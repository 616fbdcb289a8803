"""Forwarding a user's POST to the worker that holds the user's partition, body included.

`app.table_route` forwards a request's method, URL and headers but not its body
(faust-streaming 0.15.3, `Router._route_req`), so a routed POST would reach the owner empty
with the sender's Content-Length. `route_to_owner` does the same routing with the body. A
request is forwarded at most once: if the receiving worker does not think it owns the key
either (assignments in flux during a rebalance), it answers 503 and the client retries.
"""
from __future__ import annotations

from functools import wraps
from typing import Any, Awaitable, Callable

from faust.types import AppT, CollectionT
from faust.web import Request, Response, View
from yarl import URL

FORWARDED = "X-Memstream-Forwarded"
# Hop-by-hop and body framing headers are the client's to set again.
_NOT_FORWARDED = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}

Handler = Callable[..., Awaitable[Response]]


def _ident(url: URL) -> tuple[str, int]:
    return ((url.host if url.scheme else url.path) or "", int(url.port or 80))


def route_to_owner(app: AppT, table: CollectionT, match_info: str) -> Callable[[Handler], Handler]:
    """Decorate a view method: answer here when this worker owns the key, else forward."""

    def decorator(fun: Handler) -> Handler:
        @wraps(fun)
        async def routed(view: View, request: Request, *args: Any, **kwargs: Any) -> Response:
            key = request.match_info[match_info]
            try:
                owner = app.router.key_store(table.name, key)
            except KeyError:
                return view.json({"error": "partition not assigned yet, retry shortly"}, status=503)
            if _ident(owner) == _ident(URL(str(app.conf.canonical_url))):
                return await fun(view, request, *args, **kwargs)
            if request.headers.get(FORWARDED):
                return view.json({"error": "partition is moving, retry shortly"}, status=503)
            body = await request.read()
            headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
            headers[FORWARDED] = "1"
            url = request.url.with_host(owner.host or "").with_port(int(owner.port or 80))
            async with app.http_client.request(method=request.method, url=url, headers=headers,
                                               data=body) as response:
                return view.web.text(await response.text(), content_type=response.content_type,
                                     status=response.status)

        return routed

    return decorator
