"""The OpenAPI 3 description of the worker's HTTP API, served at `/openapi.json`.

Schemas come from the pydantic models of the bodies; each operation is declared once below.
tests/integration/test_registry_api.py fails when a registered route is missing here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from streams.api import registry_models as m
from topics.query import QueryRequest

USER = "/v1/users/{user_id}"


@dataclass(frozen=True)
class Param:
    name: str
    where: str = "query"
    description: str = ""
    type: str = "string"
    required: bool = False


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    responses: dict[int, type[BaseModel] | str] = field(default_factory=dict)
    body: type[BaseModel] | None = None
    params: tuple[Param, ...] = ()
    public: bool = False
    tag: str = "registry"


WAIT = Param("wait", description="1 (or a number of seconds up to COMMAND_WAIT_MAX_SECONDS): "
             "answer once the commands are applied.")
IDEMPOTENCY = Param("Idempotency-Key", "header", "Names the command(s) among this key's own (its "
                    "agent and role): a retried write applies once.")
WRITE = {200: m.WriteResult, 202: m.WriteResult, 422: m.WriteResult, 404: m.Error}
WRITE_PARAMS = (WAIT, IDEMPOTENCY)

OPERATIONS: tuple[Operation, ...] = (
    Operation("get", "/health", "Liveness and readiness (no key needed).", {200: "object", 503: "object"},
              public=True, tag="service"),
    Operation("get", "/metrics", "Prometheus metrics (text exposition format).", {200: "text"},
              tag="service"),
    Operation("get", "/openapi.json", "This description.", {200: "object"}, tag="service"),
    Operation("get", "/admin", "The admin page (HTML; the key is entered in the page).",
              {200: "html"}, public=True, tag="service"),
    Operation("get", "/admin/static/{filename}", "The admin page's script and style.",
              {200: "text"}, params=(Param("filename", "path", required=True),), public=True,
              tag="service"),
    Operation("get", USER + "/query", "memory.query with the fields as query parameters: the "
              "user's top-k memories for q, ranked, with provenance.",
              {200: "object", 400: m.Error, 403: m.Error},
              params=(Param("q", required=True), Param("agent"), Param("top_k", type="integer"),
                      Param("thread_id"), Param("since_rev", type="integer"),
                      Param("threshold", type="number"), Param("return", description="bullets or full"),
                      Param("budget_tokens", type="integer"), Param("reference_time"),
                      Param("categories", description="Comma-separated.")), tag="query"),
    Operation("post", USER + "/query", "memory.query (SPEC §5): filters, categories (the agent's "
              "allowlist applies), ranking, budget, delta header.", {200: "object", 400: m.Error,
              403: m.Error}, body=QueryRequest, tag="query"),
    Operation("get", USER + "/owner", "Which worker holds the user's partition.", {200: "object"},
              tag="service"),
    Operation("get", USER + "/events", "The user's memory.* events as text/event-stream "
              "(id: event id; event: memory.<kind>); Last-Event-ID resumes.", {200: "event-stream"},
              params=(Param("Last-Event-ID", "header"), Param("last_event_id")), tag="events"),
    Operation("get", USER + "/memories", "The user's memories, newest first, with provenance and "
              "timestamps.", {200: m.MemoryList},
              params=(Param("category", description="Repeatable or comma-separated."),
                      Param("state"), Param("pinned", description="true or false"),
                      Param("q", description="Substring of summary, tags or entities."),
                      Param("limit", type="integer"), Param("offset", type="integer"))),
    Operation("delete", USER + "/memories", "Delete (soft) every active memory the key may see.",
              WRITE, params=WRITE_PARAMS),
    Operation("get", USER + "/memories/{memory_id}", "One memory.", {200: m.MemoryView, 404: m.Error}),
    Operation("patch", USER + "/memories/{memory_id}", "Edit the memory's summary.", WRITE,
              body=m.EditBody, params=WRITE_PARAMS),
    Operation("delete", USER + "/memories/{memory_id}", "Delete (soft) the memory.", WRITE,
              params=WRITE_PARAMS),
    Operation("post", USER + "/memories/{memory_id}/pin", "Pin the memory.", WRITE, params=WRITE_PARAMS),
    Operation("post", USER + "/memories/{memory_id}/unpin", "Unpin the memory.", WRITE,
              params=WRITE_PARAMS),
    Operation("post", USER + "/memories/{memory_id}/restore", "Restore a soft-deleted memory.",
              WRITE, params=WRITE_PARAMS),
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
    Operation("delete", USER + "/blocked-topics/{topic}", "Unblock a topic.", WRITE,
              params=WRITE_PARAMS),
    Operation("get", USER + "/proposals", "The user's profile changes waiting for consent "
              "(preferred name, pronouns, city, language), oldest first.", {200: m.ProposalList}),
    Operation("post", USER + "/proposals/{proposal_id}/accept", "Consent (admin key: the user's "
              "answer): apply the proposed change (the old value is superseded).", WRITE,
              params=WRITE_PARAMS),
    Operation("post", USER + "/proposals/{proposal_id}/reject", "Reject the proposed change "
              "(admin key: the user's answer).", WRITE, params=WRITE_PARAMS),
    *(Operation("get", path, f"Faust's built-in view {path} (admin key): partition routing "
                "and raw table entries, for operators.", {200: "object"}, tag="faust")
      for path in ("/", "/router/", "/router/topics", "/router/{name}/", "/router/{name}/{key}/",
                   "/table/", "/table/{name}/", "/table/{name}/{key}/")),
    Operation("get", USER + "/commands/{command_id}", "Whether one of this key's commands (its "
              "command_id as a write answered it) was applied, and its events.",
              {200: m.CommandOutcome, 404: m.Error, 422: m.CommandOutcome},
              params=(WAIT,)),
)

_PLAIN = {"object": ("application/json", {"type": "object"}),
          "text": ("text/plain", {"type": "string"}),
          "html": ("text/html", {"type": "string"}),
          "event-stream": ("text/event-stream", {"type": "string"})}


def _path_params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


def _ref(model: type[BaseModel], schemas: dict[str, Any]) -> dict[str, Any]:
    if model.__name__ not in schemas:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, sub in schema.pop("$defs", {}).items():
            schemas.setdefault(name, sub)
        schemas[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _content(kind: type[BaseModel] | str, schemas: dict[str, Any]) -> dict[str, Any]:
    if isinstance(kind, str):
        media, schema = _PLAIN[kind]
        return {media: {"schema": schema}}
    return {"application/json": {"schema": _ref(kind, schemas)}}


def _operation(op: Operation, schemas: dict[str, Any]) -> dict[str, Any]:
    params = [Param(name, "path", required=True) for name in _path_params(op.path)]
    params += [p for p in op.params if p.name not in {q.name for q in params}]
    body: dict[str, Any] = {
        "summary": op.summary, "tags": [op.tag],
        "operationId": f"{op.method}_{op.path.strip('/').replace('/', '_').replace('{', '').replace('}', '')}",
        "parameters": [{"name": p.name, "in": p.where, "required": p.required or p.where == "path",
                        "description": p.description, "schema": {"type": p.type}} for p in params],
        "responses": {str(code): {"description": str(code), "content": _content(kind, schemas)}
                      for code, kind in op.responses.items()},
    }
    if not op.public:
        body["responses"]["401"] = {"description": "missing or invalid API key"}
        body["responses"]["403"] = {"description": "the key may not do this"}
    else:
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
                                "needs an API key (Authorization: Bearer <key> or X-API-Key)."},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"},
                                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
        },
        "security": [{"bearer": []}, {"apiKey": []}],
    }
