"""An open event stream keeps no more right than its key has now (issue 48, finding 3): a key
removed from API_KEYS_FILE, or no longer allowed the stream's user, ends its open streams, and a
narrowed allowlist filters the next event, with no request made meanwhile.

The worker's watcher (`StreamAuth.poll`, a Faust timer every SSE_AUTH_CHECK_SECONDS ≤ 1 s) is
called by the test (`Served.recheck`); file changes are stamped with `os.utime`; every read of a
stream is awaited. Nothing depends on the machine's speed."""
from __future__ import annotations


import pydantic
import pytest

from streams.api import auth
from streams.settings import Settings
from tests.unit.api.worker_web import ADMIN, ANA_ADMIN, NARROW, ONE_USER, event, served


async def test_a_revoked_keys_idle_stream_ends_at_the_watchers_next_look(tmp_path):
    async with served(tmp_path) as web:
        async with web.stream("ana", NARROW) as stream, web.stream("ana", ADMIN) as admin:
            web.hub.publish("ana", event("e1"))
            assert await stream.next_id() == "e1" and await admin.next_id() == "e1"
            assert not web.recheck(), "nothing changed: no stream is woken"
            del web.keys[NARROW]
            web.write_keys()
            assert web.recheck()  # no request was made: the watcher alone re-read the file
            assert await stream.next() is None, "the revoked key's stream ended"
            web.hub.publish("ana", event("e2"))
            assert await admin.next_id() == "e2", "another key's stream goes on"
        answer = await web.client.get("/v1/users/ana/events", headers={"Authorization": f"Bearer {NARROW}"})
        assert answer.status == 401


async def test_an_event_queued_after_the_key_was_revoked_is_not_sent(tmp_path):
    """The scope is judged for every event sent: once the keys were re-read (by the watcher or
    by any request), the next event goes through the new keys, woken or not."""
    async with served(tmp_path) as web:
        async with web.stream("ana", NARROW) as stream:
            web.hub.publish("ana", event("e1"))
            assert await stream.next_id() == "e1"
            del web.keys[NARROW]
            web.write_keys()
            assert (await web.client.get("/openapi.json",
                                         headers={"Authorization": f"Bearer {ADMIN}"})).status == 200
            web.hub.publish("ana", event("e2"))  # no watcher look, no wake-up: the event itself
            assert await stream.next() is None


async def test_a_narrowed_allowlist_filters_the_next_event(tmp_path):
    async with served(tmp_path) as web:
        async with web.stream("ana", NARROW) as stream:
            web.hub.publish("ana", event("e1", "Personal"))
            assert await stream.next_id() == "e1"
            web.allow(["Goals"])
            web.recheck()
            web.hub.publish("ana", event("e2", "Personal"))
            web.hub.publish("ana", event("e3", "Goals"))
            message = await stream.next()
            assert message is not None and message["id"] == "e3", message
            assert "Personal" not in message["data"]
            web.allow(["Goals", "Personal"])  # widened again: the next event shows it
            web.recheck()
            web.hub.publish("ana", event("e4", "Personal"))
            assert await stream.next_id() == "e4"


async def test_an_allowlist_removed_ends_the_stream(tmp_path):
    async with served(tmp_path) as web:
        async with web.stream("ana", NARROW) as stream:
            web.allow(None)
            web.recheck()
            assert await stream.next() is None


@pytest.mark.parametrize("key", [ONE_USER, ANA_ADMIN])
async def test_a_key_no_longer_allowed_the_user_ends_its_stream(tmp_path, key):
    async with served(tmp_path) as web:
        async with web.stream("ana", key) as stream:
            web.hub.publish("ana", event("e1"))
            assert await stream.next_id() == "e1"
            web.keys[key] = web.keys[key].model_copy(update={"users": ["bob"]})
            web.write_keys()
            web.recheck()
            assert await stream.next() is None


async def test_a_role_lowered_to_agent_narrows_the_stream_to_the_agents_allowlist(tmp_path):
    async with served(tmp_path) as web:
        async with web.stream("ana", ADMIN) as stream:
            web.keys[ADMIN] = auth.entry_for(ADMIN, "narrow", "agent")
            web.write_keys()
            web.recheck()
            web.hub.publish("ana", event("e1", "Finance"))
            web.hub.publish("ana", event("e2", "Goals"))
            assert await stream.next_id() == "e2"


async def test_a_key_file_that_becomes_unreadable_ends_every_stream(tmp_path):
    async with served(tmp_path) as web:
        async with web.stream("ana", ADMIN) as stream:
            web.write_keys(text="[{")
            web.recheck()
            assert await stream.next() is None


def test_the_watcher_looks_at_least_every_second():
    assert Settings().api.sse_auth_check_seconds <= 1.0
    with pytest.raises(pydantic.ValidationError):
        Settings(sse_auth_check_seconds=2)
