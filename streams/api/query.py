"""The query route's work between HTTP and `streams.read.query`, on the worker that owns the user.

Parses a request (JSON body, or the GET query string), checks it against the caller's principal
(set by the auth middleware), answers it from the user's index, and sends a `touch` command with
what was read: the commands stage refreshes `last_accessed`/`access_count`, the handler never
writes a table. What the answer shows besides its items — the delta header's changes, the
items' related memories and, in a full answer, the links of each item's document (`related_ids`,
`relations`, `consolidated_from`, `superseded_by`) — passes the caller's `Scope` narrowed to the
query's categories (streams/api/scope.py), as the items themselves are drawn only from those
categories: an answer carries no id or score of a memory outside them.
"""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Mapping

from pydantic import ValidationError

from streams.api.auth import AccessDenied, Principal
from streams.api.scope import Scope
from streams.memory.state import MemoryState
from streams.memory.access import touch
from streams.memory.vector_index import UserIndex
from streams.read import ranking
from streams.read.categories import load_policy
from streams.read.delta import render_delta
from streams.read.errors import InvalidQuery, QueryForbidden
from streams.read.fusion import Retrieval
from streams.read.query import QueryLimits, execute, plan_query
from streams.read.token_budget import get_counter
from topics.query import QueryRequest, validation_message

if TYPE_CHECKING:
    from streams.app.factory import MemstreamApp

_GET_PARAMS = {"q": "query", "agent": "agent", "top_k": "top_k", "threshold": "threshold",
               "return": "return", "budget_tokens": "budget_tokens", "since_rev": "since_rev",
               "thread_id": "thread_id", "reference_time": "reference_time",
               "include_archived": "include_archived", "explain": "explain"}


def _principal_field(principal: Any, name: str) -> Any:
    if isinstance(principal, Mapping):
        return principal.get(name)
    return getattr(principal, name, None)


def check_principal(principal: Any, agent: str) -> None:
    """An agent's API key may only query as that agent; an admin's as any agent."""
    if principal is None:
        return
    role = _principal_field(principal, "role")
    if role == "admin":
        return
    if role != "agent" or _principal_field(principal, "agent_id") != agent:
        raise QueryForbidden(f"this API key may not query as agent {agent!r}")


def parse_body(raw: bytes) -> QueryRequest:
    try:
        return QueryRequest.model_validate_json(raw or b"")
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise InvalidQuery("the body is not a valid JSON object") from None
        raise InvalidQuery(validation_message(exc)) from None


def parse_params(params: Mapping[str, str], principal: Any) -> QueryRequest:
    """The GET form: q, agent (default: the API key's agent), top_k, threshold, return,
    budget_tokens, since_rev, thread_id, reference_time, include_archived, explain, categories
    (comma-separated)."""
    allowed = {*_GET_PARAMS, "categories"}
    if not set(params) <= allowed:  # not named: a parameter's name is input too
        raise InvalidQuery(f"unknown parameters (allowed: {', '.join(sorted(allowed))})")
    data: dict[str, Any] = {field: params[name] for name, field in _GET_PARAMS.items() if name in params}
    if "categories" in params:
        data["categories"] = [c.strip() for c in params["categories"].split(",")]
    if "agent" not in data and _principal_field(principal, "role") == "agent":
        data["agent"] = _principal_field(principal, "agent_id")
    try:
        return QueryRequest.model_validate(data, strict=False)
    except ValidationError as exc:
        raise InvalidQuery(validation_message(exc).replace("query:", "q:")) from None


def delta_of(state: MemoryState, user_id: str, thread_id: str, since_rev: int,
             scope: Scope) -> tuple[int, int, str]:
    """(current rev, since_rev, header) of the thread: only the changes `scope` may see."""
    changes = scope.events(state.changes_since(user_id, thread_id, since_rev))
    return state.current_rev(user_id, thread_id), since_rev, render_delta(since_rev, changes)


def scoped_items(items: list[dict[str, Any]], scope: Scope,
                 visible: Callable[[str], bool] = lambda memory_id: False) -> list[dict[str, Any]]:
    """The answer's items with only the related memories `scope` may see, and (full items) their
    documents' links only to memories `visible(memory_id)` says it sees."""
    return [scope.references({**item, "related": scope.related(item["related"])}, visible)
            if "related" in item else item for item in items]


def visible_in(index: UserIndex, scope: Scope) -> Callable[[str], bool]:
    """Whether `scope` sees the user's memory of an id (one of the user's index, of its
    categories)."""
    def sees(memory_id: str) -> bool:
        memory = index.stored(memory_id)
        return memory is not None and scope.sees_memory(memory)
    return sees


def read_time_of(reference: datetime | None, clock: datetime | None) -> datetime | None:
    """When a read happened, for the access it records: the query's "now", but never later than
    the user's clock (a request dated in the future must not keep memories from ever expiring);
    None when neither is known (a CI run under 500 slow connections met a user whose first
    memories landed between reading the clock and ranking: `min` of nothing, a 500)."""
    times = [t for t in (reference, clock) if t is not None]
    return min(times) if times else None


async def answer(app: MemstreamApp, request: QueryRequest, user_id: str,
                 principal: Principal | None) -> dict[str, Any]:
    """Answer one query for `user_id` (this worker owns the user). Raises `QueryError`."""
    if principal is None:
        raise QueryForbidden("a query needs an API key")
    check_principal(principal, request.agent)
    await app.store.ready()
    settings = app.settings
    policy = load_policy(settings.read.categories_path)
    clock = app.store.user_clock(user_id)
    plan = plan_query(request, user_id, policy, QueryLimits.of(settings.read), clock)
    try:
        scope = Scope.of(principal, settings.read.categories_path).narrowed(plan.categories)
    except AccessDenied as exc:
        raise QueryForbidden(str(exc)) from None
    plan = await app.services.model_parts.planned(plan)  # a model call only for an allowed query
    vector = (await app.services.embed([plan.text]))[0]
    index = app.store.user_index(user_id)
    delta = None
    if request.since_rev is not None and request.thread_id is not None:
        delta = delta_of(app.store.state(), user_id, request.thread_id, request.since_rev, scope)
    response, hits = execute(index, vector, plan, policy, ranking.weights_of(settings.read),
                             get_counter(), delta, Retrieval.of(settings.read),
                             app.services.score_curve())
    response.items = scoped_items(response.items, scope, visible_in(index, scope))
    if clock is None:  # the user's first memories were applied while the query was embedded
        clock = app.store.user_clock(user_id)
    read_time = read_time_of(plan.reference, clock) if hits and request.record_access else None
    if read_time is not None:
        await app.outputs.command(touch(user_id, [h.memory.id for h in hits], read_time,
                                        request.agent))
    return response.model_dump(mode="json", by_alias=True)
