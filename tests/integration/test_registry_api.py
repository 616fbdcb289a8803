"""The registry API over real HTTP on a worker: list, get, edit, delete, pin, restore, history,
export, delete all, purge, blocked topics, command status, and the OpenAPI description."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.integration.conftest import (
    ADMIN_KEY,
    COMMAND_WAIT_S,
    PLANNER_KEY,
    call,
    make_turn,
    produce,
    query,
    unique_user,
    wait_processed,
)

pytestmark = pytest.mark.integration

TURNS = [
    "I adopted a dog named Luna last year.",
    "My goal is to run a marathon in October.",
    "I live in Lisbon with my sister Marta.",
]


class Api:
    """A tiny client: (status, JSON body) of each call, with the given key."""

    def __init__(self, base: str, key: str = ADMIN_KEY) -> None:
        self.base, self.key = base, key

    async def call(self, method: str, path: str, body: Any = None,
                   headers: dict[str, str] | None = None) -> tuple[int, Any]:
        return await call(self.base, method, path, body, self.key, headers)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def user_with_memories(worker) -> tuple[str, list[dict]]:
    user = unique_user("reg")
    turns = [make_turn(user, str(i), text) for i, text in enumerate(TURNS, 1)]
    run(produce(worker.broker_url, turns))
    run(wait_processed(worker.broker_url, turns))
    status, body = run(Api(worker.api_url).call("GET", f"/v1/users/{user}/memories"))
    assert status == 200 and len(body["items"]) >= 3, body
    return user, body["items"]


def test_list_shows_provenance_and_timestamps_and_filters(worker, user_with_memories):
    user, items = user_with_memories
    api = Api(worker.api_url)
    for item in items:
        assert item["user_id"] == user
        assert item["source_turn_ids"] and item["source_turn_ids"][0].startswith("t1:")
        assert item["created_at"].startswith("2024-05-01") and item["updated_at"]
        assert "embedding_b64" not in item
    dog = next(i for i in items if "Luna" in i["summary"])
    status, found = run(api.call("GET", f"/v1/users/{user}/memories?q=luna"))
    assert status == 200 and [i["id"] for i in found["items"]] == [dog["id"]]
    status, by_category = run(api.call("GET", f"/v1/users/{user}/memories?category={dog['category']}"))
    assert by_category["items"] and all(i["category"] == dog["category"] for i in by_category["items"])
    status, one = run(api.call("GET", f"/v1/users/{user}/memories/{dog['id']}"))
    assert status == 200 and one["summary"] == dog["summary"]
    assert run(api.call("GET", f"/v1/users/{user}/memories?limit=abc"))[0] == 400


def test_another_users_memory_is_not_found_under_this_user(worker, user_with_memories):
    user, items = user_with_memories
    other = unique_user("other")
    api = Api(worker.api_url)
    memory_id = items[0]["id"]
    for method, path in [("GET", f"/v1/users/{other}/memories/{memory_id}"),
                         ("GET", f"/v1/users/{other}/memories/{memory_id}/history"),
                         ("PATCH", f"/v1/users/{other}/memories/{memory_id}"),
                         ("DELETE", f"/v1/users/{other}/memories/{memory_id}"),
                         ("POST", f"/v1/users/{other}/memories/{memory_id}/pin")]:
        status, body = run(api.call(method, path, {"text": "Ana is a spy."} if method == "PATCH" else None))
        assert status == 404, (method, path, body)
        assert items[0]["summary"] not in json.dumps(body)
    status, body = run(api.call("GET", f"/v1/users/{other}/memories"))
    assert status == 200 and body["items"] == []
    status, body = run(api.call("GET", f"/v1/users/{other}/export"))
    assert status == 200 and body["memories"] == []


def test_edit_pin_delete_restore_each_apply_and_show_in_history(worker, user_with_memories):
    user, items = user_with_memories
    api = Api(worker.api_url)
    target = next(i for i in items if "marathon" in i["summary"])
    path = f"/v1/users/{user}/memories/{target['id']}"

    status, edited = run(api.call("PATCH", path + "?wait=1", {"text": "Ana plans to run a marathon in November."}))
    assert status == 200 and edited["status"] == "applied", edited
    assert edited["commands"][0]["events"][0]["kind"] == "updated"
    assert run(api.call("GET", path))[1]["summary"] == "Ana plans to run a marathon in November."

    assert run(api.call("POST", path + "/pin?wait=1"))[0] == 200
    assert run(api.call("GET", path))[1]["pinned"] is True
    assert run(api.call("POST", path + "/unpin?wait=1"))[0] == 200
    assert run(api.call("DELETE", path + "?wait=1"))[0] == 200
    assert run(api.call("GET", path))[1]["state"] == "soft_deleted"
    assert target["id"] not in [i["id"] for i in run(query(worker.api_url, user, "marathon"))]
    assert run(api.call("POST", path + "/restore?wait=1"))[0] == 200
    assert run(api.call("GET", path))[1]["state"] == "active"

    status, history = run(api.call("GET", path + "/history"))
    verbs = [e["verb"] for e in history["history"]]
    assert verbs[0] == "ADD" and {"UPDATE", "SOFT_DELETE", "RESTORE"} <= set(verbs), verbs
    edit = next(e for e in history["history"] if e["new"] and "November" in e["new"]["summary"])
    assert "October" in edit["old"]["summary"] and edit["actor"] == "admin:it-admin"


def test_a_write_without_wait_is_accepted_and_its_status_can_be_awaited(worker, user_with_memories):
    user, items = user_with_memories
    api = Api(worker.api_url)
    memory_id = items[0]["id"]
    status, accepted = run(api.call("POST", f"/v1/users/{user}/memories/{memory_id}/pin"))
    assert status == 202 and accepted["status"] in ("accepted", "applied")
    status_url = accepted["commands"][0]["status_url"]
    status, outcome = run(api.call("GET", f"{status_url}?wait={COMMAND_WAIT_S}"))  # in seconds
    assert status == 200 and outcome["status"] == "applied"
    assert outcome["events"][0]["memory_id"] == memory_id

    # The same Idempotency-Key applies once: the retry answers with the first outcome.
    headers = {"Idempotency-Key": accepted["commands"][0]["command_id"]}
    status, retried = run(api.call("POST", f"/v1/users/{user}/memories/{memory_id}/pin?wait=1",
                                   headers=headers))
    assert status == 200 and retried["commands"][0]["events"] == outcome["events"]
    assert run(api.call("GET", f"/v1/users/{user}/commands/never-sent"))[0] == 404


def test_an_idempotency_key_reused_for_another_write_is_a_409(worker, user_with_memories):
    user, items = user_with_memories
    api = Api(worker.api_url)
    target = next(i for i in items if "Lisbon" in i["summary"])
    path = f"/v1/users/{user}/memories/{target['id']}"
    key = {"Idempotency-Key": "bound-1"}
    status, first = run(api.call("PATCH", path + "?wait=1", {"text": "Ana lives in Porto."}, key))
    assert status == 200 and first["status"] == "applied", first
    status, again = run(api.call("PATCH", path + "?wait=1", {"text": "Ana lives in Porto."}, key))
    assert status == 200 and again["commands"] == first["commands"], "a retry: its own outcome"
    for method, where, body in (("PATCH", path, {"text": "Ana lives in Faro."}),
                                ("POST", path + "/pin", None), ("DELETE", path, None),
                                ("PATCH", f"/v1/users/{user}/memories/{items[0]['id']}",
                                 {"text": "Ana lives in Porto."})):
        status, reused = run(api.call(method, where + "?wait=1", body, key))
        assert status == 409 and reused["code"] == "idempotency_key_reused", (method, where, reused)
    status, now = run(api.call("GET", path))
    assert now["summary"] == "Ana lives in Porto." and now["state"] == "active" and not now["pinned"]


def test_bad_input_is_a_clear_error(worker, user_with_memories):
    user, items = user_with_memories
    api = Api(worker.api_url)
    path = f"/v1/users/{user}/memories/{items[0]['id']}"
    status, body = run(api.call("PATCH", path, {"text": ""}))
    assert status == 400 and "text" in body["error"] and body["code"] == "invalid_request"
    status, body = run(api.call("PATCH", path, {"summary": "x"}))
    assert status == 400
    assert run(api.call("POST", path + "/pin?wait=abc"))[0] == 400
    assert run(api.call("POST", f"/v1/users/{user}/blocked-topics", {"topic": ""}))[0] == 400


def test_blocked_topics_crud(worker):
    user = unique_user("topics")
    api = Api(worker.api_url)
    status, body = run(api.call("POST", f"/v1/users/{user}/blocked-topics?wait=1", {"topic": "Football"}))
    assert status == 200, body
    assert run(api.call("GET", f"/v1/users/{user}/blocked-topics"))[1]["topics"] == ["football"]
    assert run(api.call("DELETE", f"/v1/users/{user}/blocked-topics/football?wait=1"))[0] == 200
    assert run(api.call("GET", f"/v1/users/{user}/blocked-topics"))[1]["topics"] == []
    assert run(api.call("DELETE", f"/v1/users/{user}/blocked-topics/football"))[0] == 404


def test_delete_all_then_purge_leaves_nothing_retrievable(worker):
    user = unique_user("purge")
    turns = [make_turn(user, str(i), text) for i, text in enumerate(TURNS, 1)]
    run(produce(worker.broker_url, turns))
    run(wait_processed(worker.broker_url, turns))
    api = Api(worker.api_url)
    assert run(query(worker.api_url, user, "dog")), "a read leaves a touch record to purge too"
    run(api.call("POST", f"/v1/users/{user}/blocked-topics?wait=1", {"topic": "cooking"}))

    status, deleted = run(api.call("DELETE", f"/v1/users/{user}/memories?wait=1"))
    assert status == 200 and len(deleted["commands"]) >= 3
    items = run(api.call("GET", f"/v1/users/{user}/memories"))[1]["items"]
    assert items and {i["state"] for i in items} == {"soft_deleted"}
    summaries = [i["summary"] for i in items]

    status, body = run(Api(worker.api_url, PLANNER_KEY).call("DELETE", f"/v1/users/{user}"))
    assert status == 403, "an agent key cannot purge"
    status, purged = run(api.call("DELETE", f"/v1/users/{user}?wait=1"))
    assert status == 200 and purged["commands"][0]["kind"] == "purge_user", purged

    answers = [run(api.call("GET", f"/v1/users/{user}/memories")),
               run(api.call("GET", f"/v1/users/{user}/export")),
               run(api.call("GET", f"/v1/users/{user}/blocked-topics"))]
    answers += [run(api.call("GET", f"/v1/users/{user}/memories/{i['id']}")) for i in items]
    answers += [run(api.call("GET", f"/v1/users/{user}/memories/{i['id']}/history")) for i in items]
    assert answers[0][1]["items"] == [] and answers[1][1]["memories"] == []
    assert answers[2][1]["topics"] == []
    assert all(status == 404 for status, _ in answers[3:])
    text = json.dumps(answers)
    assert not any(s in text for s in summaries) and "cooking" not in text
    assert run(query(worker.api_url, user, "dog")) == []


def test_openapi_describes_every_registered_route(worker):
    from streams.api.openapi import build_spec
    from tests.integration.conftest import registered_routes

    status, served = run(Api(worker.api_url).call("GET", "/openapi.json"))
    assert status == 200 and served["openapi"].startswith("3.")
    assert served == json.loads(json.dumps(build_spec()))
    described = {(method.upper(), path) for path, ops in served["paths"].items() for method in ops}
    missing = [route for route in registered_routes() if route not in described]
    assert not missing, f"routes missing from /openapi.json: {missing}"
    assert "MemoryView" in served["components"]["schemas"]
