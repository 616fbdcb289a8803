"""Key configuration and access rules of streams/api/auth.py, and the SSE buffer of streams/api/sse.py."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from streams.api import auth
from streams.settings import Settings
from topics.events import MemoryEvent


def entries_json(*entries: auth.KeyEntry) -> str:
    return json.dumps([e.model_dump(exclude_none=True) for e in entries])


def test_keys_are_kept_by_hash_and_resolve_to_their_principal(tmp_path):
    admin, agent = auth.new_key(), auth.new_key()
    keys_file = tmp_path / "keys.yaml"
    keys_file.write_text(f"- agent_id: planner\n  role: agent\n  sha256: {auth.hash_key(agent)}\n"
                         "  users: [ana]\n")
    ring = auth.KeyRing.from_settings(Settings(
        memstream_api_keys=entries_json(auth.entry_for(admin, "ops", "admin")),
        api_keys_file=keys_file))
    assert admin not in keys_file.read_text() + entries_json(auth.entry_for(admin, "ops", "admin"))
    assert ring.principal(admin) == auth.Principal("ops", "admin")
    planner = ring.principal(agent)
    assert planner is not None and planner.may_act_for("ana") and not planner.may_act_for("bob")
    assert ring.principal("msk_guess") is None


@pytest.mark.parametrize("text, problem", [
    ('[{"agent_id": "a", "role": "root", "sha256": "' + "0" * 64 + '"}]', "role"),
    ('[{"agent_id": "a", "role": "agent", "sha256": "plaintext-key"}]', "sha256"),
    ("[{", "not valid JSON or YAML"),
])
def test_a_bad_key_entry_is_a_named_error(text, problem):
    with pytest.raises(auth.AuthConfigError, match=problem):
        auth.parse_entries(text, "MEMSTREAM_API_KEYS")


def test_route_rules():
    agent, admin = auth.Principal("planner", "agent", frozenset({"ana"})), auth.Principal("ops", "admin")
    auth.check_route(agent, "/v1/users/ana/memories", "ana")
    auth.check_route(agent, "/metrics", None)
    for path, user in [("/v1/users/bob/memories", "bob"), ("/table/memories/", None), ("/", None)]:
        with pytest.raises(auth.AccessDenied):
            auth.check_route(agent, path, user)
    auth.check_route(admin, "/table/memories/", None)
    assert auth.is_public("/health") and auth.is_public("/admin/static/admin.js")
    assert not auth.is_public("/healthz") and not auth.is_public("/administrator")


def test_an_agent_without_an_allowlist_sees_nothing():
    from streams.api.scope import Scope

    with pytest.raises(auth.AccessDenied):
        Scope.of(auth.Principal("nobody", "agent"), None)
    assert Scope.of(auth.Principal("ops", "admin"), None).categories is None
    assert "goals" in Scope.of(auth.Principal("planner", "agent"), None).categories


def event(event_id: str, kind: str = "created", summary: str = "Ana has a dog.") -> MemoryEvent:
    return MemoryEvent(event_id=event_id, kind=kind, user_id="ana", thread_id="t", memory_id="m",
                       rev=1, ts=datetime(2024, 5, 1, tzinfo=timezone.utc), summary=summary,
                       category="Personal")


def test_sse_buffer_drops_replays_keeps_the_newest_and_is_emptied_of_content_by_a_purge():
    from streams.pipeline.recent_events import after, remember

    buffer: list = []
    for i in range(5):
        buffer = remember(buffer, event(f"e{i}"), size=3)
    assert [e["event_id"] for e in buffer] == ["e2", "e3", "e4"]
    assert remember(buffer, event("e4"), size=3) is None, "a replayed event is not new"
    assert [e["event_id"] for e in after(buffer, "e3")[0]] == ["e4"]
    assert after(buffer, "e0") == (buffer, False), "an id no longer kept replays all, flagged"
    purged = remember(buffer, event("p1", "purged", summary=""), size=3)
    assert [e["event_id"] for e in purged] == ["p1"]
