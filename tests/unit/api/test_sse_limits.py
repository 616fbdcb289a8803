"""A worker serves a bounded number of event streams: in all, per key, and per key and user; one
more is a 429."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from aiohttp.test_utils import make_mocked_request

from streams.api import auth, sse
from streams.api.hub import Hub, StreamLimits, TooManyStreams
from streams.settings import Settings

LIMITS = StreamLimits(total=4, per_user=2, per_key=3)


def test_the_hub_refuses_a_stream_past_the_users_limit_and_counts_closed_ones_out():
    hub = Hub(limit=10)
    first = hub.subscribe("ana", LIMITS, key="k")
    hub.subscribe("ana", LIMITS, key="k")
    with pytest.raises(TooManyStreams, match="this key has 2 event streams of this user"):
        hub.subscribe("ana", LIMITS, key="k")
    hub.unsubscribe("ana", first)
    hub.unsubscribe("ana", first)  # twice (published past its queue, then the view's finally): once
    hub.subscribe("ana", LIMITS, key="k")
    assert hub.streams("ana") == 2 and hub.streams_of_key("k") == 2


def test_the_hub_refuses_a_stream_past_the_workers_limit():
    hub = Hub(limit=10)
    for user in ("ana", "bob", "cy", "dee"):
        hub.subscribe(user, LIMITS, key=f"key-of-{user}")
    with pytest.raises(TooManyStreams, match="this worker serves 4 event streams"):
        hub.subscribe("eve", LIMITS, key="key-of-eve")
    hub.close_all()
    assert hub.streams() == 0 and hub.streams_of_key("key-of-ana") == 0
    hub.subscribe("eve", LIMITS, key="key-of-eve")


def test_the_limits_are_settings():
    limits = StreamLimits.of(Settings(sse_max_streams=7, sse_max_streams_per_user=2,
                                      sse_max_streams_per_key=5).api)
    assert limits == StreamLimits(total=7, per_user=2, per_key=5)
    assert StreamLimits.of(Settings(sse_max_streams=7).api).per_key == 0


async def test_a_stream_over_the_limit_is_answered_429_before_anything_is_streamed(monkeypatch):
    settings = Settings(sse_max_streams_per_user=1)
    key = auth.new_key()
    hub = Hub(settings.api.sse_queue_events)
    hub.subscribe("ana", key=auth.hash_key(key))  # the key's one allowed stream of ana is open
    keys = auth.KeySource([auth.entry_for(key, "ops", "admin")])
    faust_app = SimpleNamespace(memstream_web=SimpleNamespace(hub=hub))
    faust_app.memstream = SimpleNamespace(settings=settings, tables=SimpleNamespace(users={"ana": b""}))
    sse._STREAM_AUTH.attach(faust_app, sse.StreamAuth(keys, None))
    monkeypatch.setattr(sse, "owner_of", lambda view, user_id: None)  # this worker owns ana
    view = sse.UserEvents(faust_app, None)
    request = make_mocked_request("GET", "/v1/users/ana/events", headers={"Authorization": f"Bearer {key}"})
    request[auth.PRINCIPAL] = auth.Principal("ops", "admin")
    answer = await view.get(request, "ana")
    assert answer.status == 429 and answer.headers["Retry-After"] == str(sse.RETRY_AFTER_S)
    assert "event streams" in json.loads(answer.body)["error"]
    assert hub.streams("ana") == 1
