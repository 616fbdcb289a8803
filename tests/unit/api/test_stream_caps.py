"""No key can lock the others out of event streams (issue 48, finding 4): the caps count per
key as well as per user and per worker, and user ids with no data (anyone may invent them) take
only their own small share."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from streams.api.hub import Hub, StreamLimits, TooManyStreams
from streams.pipeline.recent_events import RecentEvents
from streams.privacy.sealed import TABLE_OWNERS, SealedTable, Sealer
from streams.privacy.user_keys import UserKeys
from streams.privacy.crypto import decode_key
from tests.unit.agents.conftest import MASTER_KEY
from tests.unit.api.worker_web import ADMIN, NARROW, ONE_USER, served
from topics.events import MemoryEvent


# --- the hub's counts --------------------------------------------------------------------------
def test_one_keys_streams_of_a_user_leave_the_others_their_own():
    """Eight streams of ana with a key limited to ana; the admin key still gets ana's."""
    hub, limits = Hub(limit=10), StreamLimits(total=100, per_user=8)
    for _ in range(8):
        hub.subscribe("ana", limits, key="one-user")
    with pytest.raises(TooManyStreams, match="this key has 8 event streams of this user"):
        hub.subscribe("ana", limits, key="one-user")
    hub.subscribe("ana", limits, key="admin")
    assert hub.streams("ana") == 9 and hub.streams_of_key("one-user", "ana") == 8


def test_one_key_never_takes_the_whole_worker():
    hub, limits = Hub(limit=10), StreamLimits(total=10, per_user=8)
    assert limits.key_share == 5  # SSE_MAX_STREAMS_PER_KEY=0: half
    for i in range(5):
        hub.subscribe(f"user-{i}", limits, key="greedy")
    with pytest.raises(TooManyStreams, match="this key holds 5 event streams on this worker"):
        hub.subscribe("user-9", limits, key="greedy")
    for i in range(5):
        hub.subscribe(f"user-{i}", limits, key="other")
    with pytest.raises(TooManyStreams, match="this worker serves 10 event streams"):
        hub.subscribe("user-9", limits, key="third")


@pytest.mark.parametrize(("total", "per_key", "share"), [(10, 0, 5), (10, 3, 3), (10, 10, 9),
                                                          (10, 50, 9), (1, 0, 1), (2, 0, 1)])
def test_a_keys_share_is_its_setting_and_never_all_of_the_workers(total, per_key, share):
    assert StreamLimits(total=total, per_user=8, per_key=per_key).key_share == share


def test_user_ids_with_no_data_take_only_their_own_share():
    """SSE_MAX_STREAMS=5: streams of invented user ids no longer lock everyone out."""
    hub, limits = Hub(limit=10), StreamLimits(total=8, per_user=8)
    assert (limits.new_users, limits.new_users_per_key) == (2, 1)
    hub.subscribe("invented-1", limits, key="k1", new_user=True)
    with pytest.raises(TooManyStreams, match="too many event streams"):
        hub.subscribe("invented-2", limits, key="k1", new_user=True)
    hub.subscribe("invented-3", limits, key="k2", new_user=True)
    with pytest.raises(TooManyStreams, match="too many event streams"):
        hub.subscribe("invented-4", limits, key="k3", new_user=True)
    for key in ("k1", "k2", "k3"):  # users with data are still served, to every key
        hub.subscribe("ana", limits, key=key)
    assert hub.new_user_streams() == 2 and hub.streams() == 5


def test_closed_streams_give_their_counts_back():
    hub, limits = Hub(limit=1), StreamLimits(total=8, per_user=1)
    first = hub.subscribe("invented", limits, key="k", new_user=True)
    hub.publish("invented", {"event_id": "e1"})
    hub.publish("invented", {"event_id": "e2"})  # past its queue: dropped, and counted out
    assert hub.streams() == 0 and hub.new_user_streams() == 0 and hub.streams_of_key("k") == 0
    hub.unsubscribe("invented", first)  # the view's own unsubscribe changes nothing more
    assert hub.streams_of_key("k") == 0
    hub.subscribe("invented", limits, key="k", new_user=True)
    hub.close_all()
    assert hub.new_user_streams() == 0 and hub.streams_of_key("k", "invented") == 0


# --- over HTTP, the real view and middlewares --------------------------------------------------
async def test_a_one_user_keys_streams_leave_the_admin_its_own(tmp_path):
    async with served(tmp_path, sse_max_streams_per_user=2) as web:
        web.known("ana")
        assert [await web.status_of_stream("ana", ONE_USER) for _ in range(3)] == [200, 200, 429]
        assert await web.status_of_stream("ana", ADMIN) == 200


async def test_invented_user_ids_cannot_lock_out_the_users_who_exist(tmp_path):
    """SSE_MAX_STREAMS=5 (one stream of users with no data; one key: two streams at most)."""
    async with served(tmp_path, sse_max_streams=5) as web:
        web.known("ana", "bob")
        assert await web.status_of_stream("made-up-1", ADMIN) == 200
        assert await web.status_of_stream("made-up-2", ADMIN) == 429
        assert await web.status_of_stream("made-up-3", NARROW) == 429
        assert await web.status_of_stream("ana", NARROW) == 200
        assert await web.status_of_stream("bob", ADMIN) == 200
        assert await web.status_of_stream("ana", ADMIN) == 429, "the admin key's share: two of five"
        assert await web.status_of_stream("bob", NARROW) == 200


async def test_a_user_with_buffered_events_only_has_data(tmp_path):
    """Known from its replay buffer alone (no `users` record): counted as a user who exists."""
    async with served(tmp_path, sse_max_streams=4, memstream_master_key=MASTER_KEY) as web:
        buffered = SealedTable(web.app.tables.recent_events.data,
                               Sealer(UserKeys(web.app.tables.user_keys.data, decode_key(MASTER_KEY))),
                               TABLE_OWNERS["recent_events"])
        RecentEvents(buffered, 10).add("cy", [MemoryEvent(
            event_id="e1", kind="created", user_id="cy", thread_id="t1", memory_id="m1", rev=1,  # type: ignore[arg-type]
            ts=datetime(2024, 5, 1, tzinfo=timezone.utc), summary="Cy has a dog.", category="Goals")])
        assert await web.status_of_stream("made-up", ADMIN) == 200  # the one stream of no-data users
        assert await web.status_of_stream("made-up-2", NARROW) == 429
        assert await web.status_of_stream("cy", NARROW) == 200
