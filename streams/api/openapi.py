"""The OpenAPI 3 description of the worker's HTTP API, served at `/openapi.json`: the contract.

Schemas come from the pydantic models of the bodies; each operation is declared once below,
with the answers only it gives. The answers every operation of a kind can give are added by
`_common`: 401/403/503 where a key is needed (no valid key, a key that may not, the key file
unreadable), 400/503 on a user's routes (the user id is not one, the user's partition is moving:
retry), 400/413 where a body is read (invalid, over 1 MB). Every error is `{"error": ...,
"code": ...}` (`streams.api.views`).

An event stream (`text/event-stream`) declares one event per its schema (OpenAPI 3.1 has no
`itemSchema`): `memory.<kind>` events and the `reset` event; keep-alives are comment lines.

tests/integration/test_registry_api.py fails when a registered route is missing here;
tests/integration/test_openapi_contract.py checks a running worker's answers against it;
docs/api.md is made from it (`python -m streams.api.openapi_docs > docs/api.md`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from http import HTTPStatus
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, RootModel

from streams.api import registry_models as m
from topics.events import EventKind, MemoryEvent
from topics.query import (BUDGET_TOKENS_MAX, REVISION_MAX, TOP_K_MAX, BulletItem, FullItem,
                          QueryRequest, QueryResponse)
from topics.turns import ID_PATTERN

USER = "/v1/users/{user_id}"


# --- bodies only the OpenAPI names (the routes answer them as plain JSON) -----------------------
class Health(BaseModel):
    """503 until the worker's tables are recovered and its partitions assigned, and while a
    stage is stalled."""

    status: Literal["ok"]
    ready: bool
    partitions: int = Field(description="Partitions assigned to this worker (0 while not ready).")
    assigned: dict[str, list[int]] = Field(
        default_factory=dict,
        description="The input topics' partitions this worker holds, by topic (tables' changelogs "
                    "left out; empty while not ready). Every topic is keyed by user_id with one "
                    "partition count, so `chat.turns`'s are the users this worker serves.")
    stalled: dict[str, str] = Field(
        default_factory=dict,
        description="Stages stalled on a record that fails every retry, with the error's type "
                    "(STAGE_ON_BUG=stall; alert MemstreamStageStalled): not ready while any is.")


class Owner(BaseModel):
    """The worker that holds the user's partition."""

    user_id: str
    host: str
    port: int


class QueryAnswer(QueryResponse):
    """The answer to memory.query: its items are bullets (`return: bullets`) or full items."""

    items: list[FullItem | BulletItem]  # type: ignore[assignment]  # typed items for the docs; the wire model's are dicts


class CommandStatus(BaseModel):
    """What became of one of the key's commands: applied (200, with its events) or rejected
    (422, with the reason)."""

    command_id: str = Field(description="The caller's name of the command.")
    status: Literal["applied", "rejected"]
    events: list[dict[str, Any]]
    reason: str | None = None


class StreamReset(BaseModel):
    """The data of a `reset` event: the Last-Event-ID asked for is no longer buffered (events
    may have been missed): re-read the registry, then follow the stream."""

    last_event_id: str | None


class FaustStatus(BaseModel):
    status: str


class Partitions(RootModel[dict[str, dict[str, list[int]]]]):
    """Worker URL -> topic (or table changelog) -> the partitions it holds."""


class TableInfo(BaseModel):
    name: str
    help: str


class TableList(RootModel[list[TableInfo]]):
    """Faust's tables of this worker."""


class WorkerUrl(RootModel[str]):
    """The URL of the worker that holds the key's partition."""


class TableEntry(RootModel[Any]):
    """A raw table entry, as stored: in a sealed table the binary envelope (its user id, then
    the sealed bytes), which Faust shows as a bytes literal."""


# --- operations ---------------------------------------------------------------------------------
Body = type[BaseModel] | str
"""An answer's body: a model (application/json), a name of `_PLAIN`, or "event-stream"."""


@dataclass(frozen=True)
class Param:
    name: str
    where: str = "query"
    description: str = ""
    type: str = "string"
    required: bool = False
    schema: dict[str, Any] | None = None
    """The parameter's JSON schema, when more than its `type`."""


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    responses: dict[int, Body] = field(default_factory=dict)
    body: type[BaseModel] | None = None
    params: tuple[Param, ...] = ()
    public: bool = False
    tag: str = "registry"


SECONDS = {"anyOf": [{"type": "number", "minimum": 0}, {"enum": ["true", "false"]}]}
WAIT = Param("wait", description="1 or true: answer once the commands are applied, waiting up to "
             "COMMAND_WAIT_MAX_SECONDS (then 202); a number: wait up to that many seconds (at most "
             "COMMAND_WAIT_MAX_SECONDS); 0 or false: do not wait.", type="number", schema=SECONDS)
IDEMPOTENCY = Param("Idempotency-Key", "header", "Names the command(s) among this key's own (its "
                    "agent and role): a retried write applies once. The name is bound to the "
                    "write it was given for (method, path, body): reusing it for another write "
                    "is a 409 (idempotency_key_reused).",
                    schema={"type": "string", "maxLength": 150})
WRITE: dict[int, Body] = {200: m.WriteResult, 202: m.WriteResult, 409: m.Error, 422: m.WriteResult}
"""A write: 202 when its commands are sent, 200 once all are applied (?wait), 409 when its
Idempotency-Key named another write, 422 when one was rejected; 400 for an invalid wait or
Idempotency-Key."""
WRITE_TO = {**WRITE, 404: m.Error}
"""A write to something named in the path (404: it does not exist, or the key may not see it)."""
WRITE_PARAMS = (WAIT, IDEMPOTENCY)
FAUST_404 = {404: m.Error}  # no such table (or key)


def _int(low: int, high: int | None = None) -> dict[str, Any]:
    return {"type": "integer", "minimum": low, **({"maximum": high} if high is not None else {})}


OPERATIONS: tuple[Operation, ...] = (
    Operation("get", "/health", "Liveness and readiness.",
              {200: Health, 503: Health}, public=True, tag="service"),
    Operation("get", "/metrics", "Prometheus metrics (text exposition format).", {200: "text"},
              tag="service"),
    Operation("get", "/openapi.json", "This description.", {200: "object"}, tag="service"),
    Operation("get", "/admin", "The admin page (HTML; the key is entered in the page).",
              {200: "html"}, public=True, tag="service"),
    Operation("get", "/admin/static/{filename}", "The admin page's script and style.",
              {200: "admin-file", 404: m.Error},
              params=(Param("filename", "path", "admin.js or admin.css", required=True),),
              public=True, tag="service"),
    Operation("get", USER + "/query", "memory.query with the fields as query parameters: the "
              "user's top-k memories for q, ranked, with provenance.",
              {200: QueryAnswer, 400: m.Error},
              params=(Param("q", required=True, schema={"type": "string", "minLength": 1}),
                      Param("agent", description="Default: the key's agent."),
                      Param("top_k", type="integer", schema=_int(1, TOP_K_MAX)), Param("thread_id"),
                      Param("since_rev", type="integer", schema=_int(0, REVISION_MAX)),
                      Param("threshold", type="number",
                            schema={"type": "number", "minimum": 0, "maximum": 1}),
                      Param("return", description="bullets or full",
                            schema={"enum": ["bullets", "full"]}),
                      Param("budget_tokens", type="integer", schema=_int(1, BUDGET_TOKENS_MAX)),
                      Param("reference_time", description="An ISO 8601 time with its zone."),
                      Param("include_archived", type="boolean"),
                      Param("explain", type="boolean",
                            description="Each item with the figures behind its score."),
                      Param("categories", description="Comma-separated.")), tag="query"),
    Operation("post", USER + "/query", "memory.query (docs/architecture.md#read-path): filters, categories (the agent's "
              "allowlist applies), ranking, budget, delta header.", {200: QueryAnswer},
              body=QueryRequest, tag="query"),
    Operation("get", USER + "/owner", "Which worker holds the user's partition.", {200: Owner},
              tag="service"),
    Operation("get", USER + "/events", "The user's `memory.*` events as text/event-stream "
              "(`id`: the event id; `event: memory.<kind>`; `data`: the event's JSON); a "
              "`reset` event first when Last-Event-ID is no longer buffered; `: ping` comment "
              "lines keep the connection alive. Last-Event-ID resumes. 429 past SSE_MAX_STREAMS, "
              "SSE_MAX_STREAMS_PER_KEY for the key, or SSE_MAX_STREAMS_PER_USER for the key and "
              "user. The key is judged again for every event: the stream ends once the key is "
              "removed or may no longer act for the user, and a narrowed allowlist applies from "
              "the next event.",
              {200: "event-stream", 429: m.Error},
              params=(Param("Last-Event-ID", "header"), Param("last_event_id")), tag="events"),
    Operation("get", USER + "/memories", "The user's memories, newest first, with provenance and "
              "timestamps.", {200: m.MemoryList, 400: m.Error},
              params=(Param("category", description="Repeatable or comma-separated."),
                      Param("state"), Param("pinned", description="true or false"),
                      Param("q", description="Substring of summary, tags or entities."),
                      Param("thread_id", description="Only memories made in this thread."),
                      Param("limit", type="integer", schema=_int(0, 5000)),
                      Param("offset", type="integer", schema=_int(0, 10**9)))),
    Operation("delete", USER + "/memories", "Delete (soft) every active memory the key may see.",
              WRITE, params=WRITE_PARAMS),
    Operation("get", USER + "/memories/{memory_id}", "One memory.", {200: m.MemoryView, 404: m.Error}),
    Operation("patch", USER + "/memories/{memory_id}", "Edit the memory's summary.", WRITE_TO,
              body=m.EditBody, params=WRITE_PARAMS),
    Operation("delete", USER + "/memories/{memory_id}", "Delete (soft) the memory.", WRITE_TO,
              params=WRITE_PARAMS),
    Operation("post", USER + "/memories/{memory_id}/pin", "Pin the memory.", WRITE_TO,
              params=WRITE_PARAMS),
    Operation("post", USER + "/memories/{memory_id}/unpin", "Unpin the memory.", WRITE_TO,
              params=WRITE_PARAMS),
    Operation("post", USER + "/memories/{memory_id}/restore", "Restore a soft-deleted memory.",
              WRITE_TO, params=WRITE_PARAMS),
    Operation("get", USER + "/memories/{memory_id}/history", "The memory's audit trail, oldest "
              "first.", {200: m.History, 404: m.Error}),
    Operation("get", USER + "/export", "Everything kept about the user (that the key may see).",
              {200: m.Export}),
    Operation("delete", USER, "Purge the user (admin key): nothing of the user remains but "
              "content-free tombstones in the audit.", WRITE, params=WRITE_PARAMS),
    Operation("get", USER + "/blocked-topics", "The user's blocked topics (empty for a key whose "
              "scope lacks their category, Other).", {200: m.BlockedTopics}),
    Operation("post", USER + "/blocked-topics", "Block a topic (a key whose scope has Other).",
              WRITE, body=m.TopicBody, params=WRITE_PARAMS),
    Operation("delete", USER + "/blocked-topics/{topic}", "Unblock a topic.", WRITE_TO,
              params=WRITE_PARAMS),
    Operation("get", USER + "/proposals", "The user's profile changes waiting for consent "
              "(preferred name, pronouns, city, language), oldest first.", {200: m.ProposalList}),
    Operation("post", USER + "/proposals/{proposal_id}/accept", "Consent (admin key: the user's "
              "answer): apply the proposed change (the old value is superseded).", WRITE_TO,
              params=WRITE_PARAMS),
    Operation("post", USER + "/proposals/{proposal_id}/reject", "Reject the proposed change "
              "(admin key: the user's answer).", WRITE_TO, params=WRITE_PARAMS),
    *(Operation("get", path, f"Faust's built-in view {path} (an admin key for every user: "
                "one limited to some users gets 403): partition routing and raw table entries, "
                "for operators.", responses, tag="faust")
      for path, responses in (
          ("/", {200: FaustStatus}),
          ("/router/", {200: Partitions}),
          ("/router/topics", {200: Partitions}),
          ("/router/{name}/", {200: Partitions, **FAUST_404}),
          ("/router/{name}/{key}/", {200: WorkerUrl, **FAUST_404}),
          ("/table/", {200: TableList}),
          ("/table/{name}/", {200: TableInfo, **FAUST_404}),
          ("/table/{name}/{key}/", {200: TableEntry, **FAUST_404}))),
    Operation("get", USER + "/commands/{command_id}", "Whether one of this key's commands (its "
              "command_id as a write answered it) was applied, and its events.",
              {200: CommandStatus, 404: m.Error, 422: CommandStatus},
              params=(WAIT,)),
)

MEANINGS = {
    400: "The request is not valid (the message says why).",
    401: "Missing or invalid API key.",
    403: "The key may not do this.",
    404: "No such thing (or the key may not see it).",
    409: "The Idempotency-Key named another write (another method, path or body): nothing was "
         "done; use a new key.",
    413: "The body is over 1 MB.",
    422: "A command was rejected (dead-lettered; see its reason).",
    429: "Too many event streams: retry after Retry-After seconds.",
    503: "Unavailable for now (tables recovering, the user's partition moving, the key file "
         "or the categories file unreadable): retry, after Retry-After seconds when given.",
}
STRING = {"type": "string"}
_PLAIN: dict[str, dict[str, dict[str, Any]]] = {
    "object": {"application/json": {"type": "object"}},
    "text": {"text/plain": STRING},
    "html": {"text/html": STRING},
    "admin-file": {"application/javascript": STRING, "text/javascript": STRING, "text/css": STRING},
}
"""Bodies that are no model, by name: media type -> schema."""


def _common(op: Operation) -> dict[int, Body]:
    """The answers every operation of `op`'s kind can give (see the module's docstring)."""
    codes: dict[int, Body] = {}
    if op.path.startswith(USER) or op.body is not None or WAIT in op.params:
        codes[400] = m.Error
    if not op.public:
        codes |= {401: m.Error, 403: m.Error, 503: m.Error}
    if op.body is not None:
        codes[413] = m.Error
    return codes


def _path_params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


def _ref(model: type[BaseModel], schemas: dict[str, Any]) -> dict[str, Any]:
    if model.__name__ not in schemas:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, sub in schema.pop("$defs", {}).items():
            schemas.setdefault(name, sub)
        schemas[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _json_data(model: type[BaseModel], schemas: dict[str, Any]) -> dict[str, Any]:
    """An event's `data` field: the JSON of `model`."""
    return {"type": "string", "contentMediaType": "application/json",
            "contentSchema": _ref(model, schemas)}


def _event_schema(schemas: dict[str, Any]) -> dict[str, Any]:
    """One event of the user's event stream: a `memory.<kind>` event or a `reset`."""
    memory = {"type": "object", "required": ["id", "event", "data"], "properties": {
        "id": {"type": "string",
               "description": "The event's event_id (Last-Event-ID resumes after it)."},
        "event": {"enum": [f"memory.{kind}" for kind in get_args(EventKind)]},
        "data": _json_data(MemoryEvent, schemas)}}
    reset = {"type": "object", "required": ["event", "data"], "properties": {
        "event": {"const": "reset"}, "data": _json_data(StreamReset, schemas)}}
    return {"oneOf": [memory, reset]}


def _content(kind: Body, schemas: dict[str, Any]) -> dict[str, Any]:
    if kind == "event-stream":
        return {"text/event-stream": {"schema": _event_schema(schemas)}}
    if isinstance(kind, str):
        return {media: {"schema": schema} for media, schema in _PLAIN[kind].items()}
    return {"application/json": {"schema": _ref(kind, schemas)}}


def _response(code: int, kind: Body, schemas: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"description": MEANINGS.get(code, HTTPStatus(code).phrase),
                                "content": _content(kind, schemas)}
    if code in (429, 503):
        response["headers"] = {"Retry-After": {"description": "Seconds to wait before retrying.",
                                               "schema": {"type": "integer"}}}
    return response


def _parameter(param: Param) -> dict[str, Any]:
    if param.name == "user_id":
        return {"name": "user_id", "in": "path", "required": True,
                "description": "1-200 characters: no whitespace, slash or control character.",
                "schema": {"type": "string", "minLength": 1, "maxLength": 200,
                           "pattern": ID_PATTERN}}
    return {"name": param.name, "in": param.where,
            "required": param.required or param.where == "path",
            "description": param.description, "schema": param.schema or {"type": param.type}}


def _operation(op: Operation, schemas: dict[str, Any]) -> dict[str, Any]:
    params = [Param(name, "path", required=True) for name in _path_params(op.path)]
    params = [next((p for p in op.params if p.name == q.name), q) for q in params]
    params += [p for p in op.params if p.name not in {q.name for q in params}]
    responses = {**_common(op), **op.responses}
    body: dict[str, Any] = {
        "summary": op.summary, "tags": [op.tag],
        "operationId": f"{op.method}_{op.path.strip('/').replace('/', '_').replace('{', '').replace('}', '')}",
        "parameters": [_parameter(p) for p in params],
        "responses": {str(code): _response(code, responses[code], schemas)
                      for code in sorted(responses)},
    }
    if op.public:
        body["security"] = []
    if op.body is not None:
        body["requestBody"] = {"required": True, "content": _content(op.body, schemas)}
    return body


@lru_cache(maxsize=1)
def build_spec() -> dict[str, Any]:
    """The OpenAPI 3.1 document of every operation."""
    schemas: dict[str, Any] = {}
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op, schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": "memstream", "version": "1",
                 "description": "Streaming long-term memory for chat agents: query, registry, "
                                "events. Every route but /health and the admin page's files "
                                "needs an API key (`Authorization: Bearer <key>` or `X-API-Key`). "
                                "Every error answer is JSON {\"error\": \"...\", \"code\": "
                                "\"...\"}: a message safe to show and a stable code."},
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"},
                                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
        },
        "security": [{"bearer": []}, {"apiKey": []}],
    }
