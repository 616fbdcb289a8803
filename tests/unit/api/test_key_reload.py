"""Keys and category allowlists follow their files: a key removed from API_KEYS_FILE, or a
category removed from an agent's allowlist, stops working at the next request, no restart.

A change is told by the file's inode, modification time (ns) and size; each test sets the
modification time itself (`os.utime`), so nothing waits and nothing depends on the clock."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from streams.api import auth
from streams.api.scope import Scope
from streams.settings import Settings
from streams.read.categories import load_policy

KEPT, REVOKED = auth.new_key(), auth.new_key()


def write(path: Path, text: str, mtime_ns: int) -> None:
    """Write `text` and stamp the file with `mtime_ns`: a change the watcher must see."""
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def entries(*keys: str) -> str:
    return json.dumps([auth.entry_for(k, f"agent-{i}", "agent").model_dump(exclude_none=True)
                       for i, k in enumerate(keys)])


def test_a_key_removed_from_the_key_file_stops_working_without_a_restart(tmp_path):
    keys_file = tmp_path / "keys.json"
    write(keys_file, entries(KEPT, REVOKED), 1_000_000_000)
    source = auth.KeySource.from_settings(Settings(api_keys_file=keys_file))
    assert source.ring().principal(REVOKED) is not None
    write(keys_file, entries(KEPT), 2_000_000_000)
    assert source.ring().principal(REVOKED) is None
    assert source.ring().principal(KEPT) is not None


def test_fixed_keys_stay_when_the_file_changes(tmp_path):
    keys_file = tmp_path / "keys.json"
    write(keys_file, entries(REVOKED), 1_000_000_000)
    dev = auth.entry_for(KEPT, "admin", "admin")
    source = auth.KeySource.from_settings(Settings(api_keys_file=keys_file), [dev])
    write(keys_file, "[]", 2_000_000_000)
    assert source.ring().principal(KEPT) == auth.Principal("admin", "admin")
    assert source.ring().principal(REVOKED) is None


def test_a_key_file_that_becomes_unreadable_refuses_every_key_until_it_is_fixed(tmp_path):
    keys_file = tmp_path / "keys.json"
    write(keys_file, entries(KEPT, REVOKED), 1_000_000_000)
    source = auth.KeySource(path=keys_file)
    write(keys_file, "[{", 2_000_000_000)  # a bad edit must not leave REVOKED working
    with pytest.raises(auth.KeysUnavailable, match="not valid JSON or YAML"):
        source.ring()
    with pytest.raises(auth.KeysUnavailable):
        source.ring()  # still refused: the file has not changed since
    write(keys_file, entries(KEPT), 3_000_000_000)
    assert source.ring().principal(KEPT) is not None


def test_a_bad_key_file_at_start_is_still_a_config_error(tmp_path):
    keys_file = tmp_path / "keys.json"
    keys_file.write_text("[{")
    with pytest.raises(auth.AuthConfigError):
        auth.KeySource(path=keys_file)


def test_a_file_replaced_by_a_rename_is_seen_even_with_the_same_time_and_size(tmp_path):
    keys_file, replacement = tmp_path / "keys.json", tmp_path / "keys.json.new"
    write(keys_file, entries(REVOKED), 1_000_000_000)
    source = auth.KeySource(path=keys_file)
    write(replacement, entries(KEPT), 1_000_000_000)  # same size, same time: another inode
    os.replace(replacement, keys_file)
    assert source.ring().principal(REVOKED) is None and source.ring().principal(KEPT) is not None


async def ok(request: web.Request) -> web.Response:
    return web.json_response({"agent": request[auth.PRINCIPAL].agent_id})


async def test_the_middleware_answers_401_for_a_revoked_key_and_503_for_an_unreadable_file(tmp_path):
    keys_file = tmp_path / "keys.json"
    write(keys_file, entries(KEPT, REVOKED), 1_000_000_000)
    app = web.Application()
    auth.install(app, auth.KeySource(path=keys_file))
    app.router.add_get("/openapi.json", ok)
    async with TestClient(TestServer(app)) as client:
        bearer = {"Authorization": f"Bearer {REVOKED}"}
        assert (await client.get("/openapi.json", headers=bearer)).status == 200
        write(keys_file, entries(KEPT), 2_000_000_000)
        assert (await client.get("/openapi.json", headers=bearer)).status == 401
        write(keys_file, "- not: [a key", 3_000_000_000)
        answer = await client.get("/openapi.json", headers={"Authorization": f"Bearer {KEPT}"})
        assert answer.status == 503
        assert await answer.json() == {"error": "the API key configuration cannot be read"}


CATEGORIES = """categories:
  system:
    - {{name: Goals, context: all}}
    - {{name: Finance, context: rag}}
  custom: []
allowlists:
  planner: [{allowed}]
"""


async def test_an_allowlist_narrowed_in_the_categories_file_applies_at_the_next_request(tmp_path):
    categories = tmp_path / "categories.yaml"
    write(categories, CATEGORIES.format(allowed="Goals, Finance"), 1_000_000_000)
    planner = auth.Principal("planner", "agent")
    load_policy.cache_clear()
    seen: list[frozenset[str] | None] = []

    async def scope_of(request: web.Request) -> web.Response:
        seen.append(Scope.of(planner, categories).categories)
        return web.json_response({})

    app = web.Application(middlewares=[auth.reload_on_change(categories, load_policy.cache_clear)])
    app.router.add_get("/scope", scope_of)
    try:
        async with TestClient(TestServer(app)) as client:
            await client.get("/scope")
            write(categories, CATEGORIES.format(allowed="Goals"), 2_000_000_000)
            await client.get("/scope")
    finally:
        load_policy.cache_clear()
    assert seen == [frozenset({"goals", "finance"}), frozenset({"goals"})]
