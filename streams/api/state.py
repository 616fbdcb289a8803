"""What the web layer keeps in a worker, built by the web layer (`streams.api.web.register`), not
by the worker's app: the connected SSE clients and the registry's pending `?wait=1` requests.

The stages hear of neither: they are given `WebState.listeners` (`streams.app.stage_kit`),
so the stages' side (`streams.app`) never imports the web layer.
"""
from __future__ import annotations

from dataclasses import dataclass

import faust

from streams.api.command_waiter import CommandWaiter
from streams.api.hub import Hub
from streams.app.faust_slots import AppSlot
from streams.app.stage_kit import StageListeners


@dataclass(frozen=True)
class WebState:
    """`hub`: this worker's SSE clients, by user; `command_waiter`: the registry's requests
    waiting for their command's outcome."""

    hub: Hub
    command_waiter: CommandWaiter

    @property
    def listeners(self) -> StageListeners:
        """What the stages tell the web layer: each command's outcome, each new memory event."""
        return StageListeners(commands=self.command_waiter, events=self.hub.publish)

    def attach(self, faust_app: faust.App) -> None:
        """Make this the state the views of `faust_app` find (`WebState.of`)."""
        _WEB_STATE.attach(faust_app, self)

    @staticmethod
    def of(faust_app: faust.App) -> WebState:
        """The web state of a Faust app (a web view's `self.app`)."""
        return _WEB_STATE.of(faust_app)


_WEB_STATE: AppSlot[WebState] = AppSlot("memstream_web")
"""Where a Faust app keeps its web state, for its views (`WebState.of`)."""
