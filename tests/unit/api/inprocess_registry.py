"""The registry's views over an `InProcessPipeline`, without Faust or Kafka: a view method is
called with a mocked request, the commands it sends land on the pipeline's local topics, and
`deliver()` applies them with the same commands stage a worker runs."""
from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from faust.web import View

from streams.api import auth, routing
from streams.api.command_waiter import CommandWaiter
from streams.api.hub import Hub
from streams.api.state import WebState
from streams.app.inprocess import InProcessPipeline

ADMIN = auth.Principal("ops", "admin")
PLANNER = auth.Principal("planner", "agent")  # Goals, Budget, Finance, Conversation_Summary, …


class JsonWeb:
    """What a Faust view's `self.json` asks of its web driver."""

    def json(self, value: Any, *, content_type: str | None = None, status: int = 200,
             reason: str | None = None, headers: Any = None) -> web.Response:
        return web.json_response(json.loads(json.dumps(value, default=str)), status=status,
                                 headers=headers)


class Registry:
    """The registry's routes of one in-process pipeline."""

    def __init__(self, pipeline: InProcessPipeline, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(routing, "owner_of", lambda view, user_id: None)  # this worker owns all
        self.pipeline = pipeline
        self.waiter = CommandWaiter()
        memstream = SimpleNamespace(store=pipeline.store, sealed=pipeline.sealed,
                                    outputs=pipeline.outputs, settings=pipeline.settings,
                                    services=pipeline.services, tables_ready=lambda: True)
        self.app = SimpleNamespace(memstream=memstream,
                                   memstream_web=WebState(Hub(10), self.waiter))

    async def call(self, view: type[View], method: str, path: str, principal: auth.Principal = ADMIN,
                   body: Any = None, headers: dict[str, str] | None = None,
                   **match_info: str) -> tuple[int, Any]:
        """(status, JSON body) of `view`'s answer to one request."""
        request = make_mocked_request(method.upper(), path, headers=headers or {},
                                      match_info=match_info)
        request._read_bytes = json.dumps(body).encode() if body is not None else b""
        request[auth.PRINCIPAL] = principal
        answer = await getattr(view(self.app, JsonWeb()), method.lower())(request, **match_info)
        return answer.status, json.loads(answer.body)
