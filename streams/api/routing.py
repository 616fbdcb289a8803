"""Answering a user's request on the worker that holds the user's partition.

A user's memories live in the tables of one worker: the one assigned the partition of the
user's key. `route_to_owner` answers a request there and forwards it otherwise, with its
method, URL, headers (the API key travels with them) and body. (Faust's own `table_route`
does not forward the body — faust-streaming 0.15.3, `Router._route_req` — so a routed POST would
reach the owner empty.) A request is forwarded at most once: if the receiving worker does not
think it owns the key either (assignments in flux during a rebalance), it answers 503 and the
client retries. A user id that no record could carry is answered 400 before any of this.
"""
from __future__ import annotations

from functools import wraps
from typing import Annotated, Any, Awaitable, Callable

import aiohttp
from faust.web import Request, Response, View
from pydantic import TypeAdapter, ValidationError
from yarl import URL

from topics.turns import Identifier

FORWARDED = "X-Memstream-Forwarded"
USERS_TABLE = "users"
"""The table whose partitions decide who owns a user (keyed by user_id, like every topic)."""
# Hop-by-hop and body framing headers are the client's to set again.
_NOT_FORWARDED = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}

Handler = Callable[..., Awaitable[Response]]
_USER_ID: TypeAdapter[str] = TypeAdapter(Annotated[str, Identifier])
INVALID_USER_ID = "not a valid user id (1-200 characters, no whitespace or slash)"


def is_user_id(text: str) -> bool:
    """Whether `text` can be a user's id at all (what `chat.turns` and commands accept): a
    route's user id that cannot is answered 400 before it names a partition or a command."""
    try:
        _USER_ID.validate_python(text)
    except ValidationError:
        return False
    return True


def _ident(url: URL) -> tuple[str, int]:
    return ((url.host if url.scheme else url.path) or "", int(url.port or 80))


def owner_of(view: View, user_id: str) -> URL | None:
    """The owning worker's URL, None when it is this one; KeyError while unassigned."""
    owner: URL = view.app.router.key_store(USERS_TABLE, user_id)
    return None if _ident(owner) == _ident(URL(str(view.app.conf.canonical_url))) else owner


def route_to_owner(match_info: str = "user_id") -> Callable[[Handler], Handler]:
    """Decorate a view method: answer here when this worker owns the user, else forward."""

    def decorator(fun: Handler) -> Handler:
        @wraps(fun)
        async def routed(view: View, request: Request, *args: Any, **kwargs: Any) -> Response:
            if not is_user_id(request.match_info[match_info]):
                return view.json({"error": INVALID_USER_ID}, status=400)
            try:
                owner = owner_of(view, request.match_info[match_info])
            except KeyError:
                return view.json({"error": "partition not assigned yet, retry shortly"}, status=503)
            if owner is None:
                memstream = getattr(view.app, "memstream", None)
                if memstream is not None:
                    await memstream.store.ready()  # the index, if a rebalance left it stale
                return await fun(view, request, *args, **kwargs)
            if request.headers.get(FORWARDED):
                return view.json({"error": "partition is moving, retry shortly"}, status=503)
            body = await request.read()
            headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
            headers[FORWARDED] = "1"
            url = request.url.with_host(owner.host or "").with_port(int(owner.port or 80))
            try:
                async with view.app.http_client.request(method=request.method, url=url,
                                                        headers=headers, data=body) as response:
                    return view.web.text(await response.text(), content_type=response.content_type,
                                         status=response.status)
            except aiohttp.ClientConnectionError:
                # The owner left (stopped, killed) and the group has not rebalanced yet: its
                # partitions come to a live worker shortly.
                return view.json({"error": "the worker holding this user is unreachable, "
                                           "retry shortly"}, status=503)

        return routed

    return decorator
