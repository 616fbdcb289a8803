"""A worker serves a bounded number of event streams: in all, and per user; one more is a 429."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from aiohttp.test_utils import make_mocked_request

from streams.api import auth, sse
from streams.api.hub import Hub, StreamLimits, TooManyStreams
from streams.settings import Settings

LIMITS = StreamLimits(total=3, per_user=2)


def test_the_hub_refuses_a_stream_past_the_users_limit_and_counts_closed_ones_out():
    hub = Hub(limit=10)
    first = hub.subscribe("ana", LIMITS)
    hub.subscribe("ana", LIMITS)
    with pytest.raises(TooManyStreams, match="this user has 2 event streams"):
        hub.subscribe("ana", LIMITS)
    hub.unsubscribe("ana", first)
    hub.subscribe("ana", LIMITS)
    assert hub.streams("ana") == 2


def test_the_hub_refuses_a_stream_past_the_workers_limit():
    hub = Hub(limit=10)
    for user in ("ana", "bob", "cy"):
        hub.subscribe(user, LIMITS)
    with pytest.raises(TooManyStreams, match="this worker serves 3 event streams"):
        hub.subscribe("dee", LIMITS)
    hub.close_all()
    assert hub.streams() == 0
    hub.subscribe("dee", LIMITS)


def test_the_limits_are_settings():
    limits = StreamLimits.of(Settings(sse_max_streams=7, sse_max_streams_per_user=2).api)
    assert limits == StreamLimits(total=7, per_user=2)


async def test_a_stream_over_the_limit_is_answered_429_before_anything_is_streamed(monkeypatch):
    settings = Settings(sse_max_streams_per_user=1)
    hub = Hub(settings.api.sse_queue_events)
    hub.subscribe("ana")  # the user's one allowed stream is open
    memstream = SimpleNamespace(settings=settings)
    monkeypatch.setattr(sse, "owner_of", lambda view, user_id: None)  # this worker owns ana
    view = sse.UserEvents(SimpleNamespace(memstream=memstream,
                                          memstream_web=SimpleNamespace(hub=hub)), None)
    request = make_mocked_request("GET", "/v1/users/ana/events")
    request[auth.PRINCIPAL] = auth.Principal("ops", "admin")
    answer = await view.get(request, "ana")
    assert answer.status == 429 and answer.headers["Retry-After"] == str(sse.RETRY_AFTER_S)
    assert "event streams" in json.loads(answer.body)["error"]
    assert hub.streams("ana") == 1
