"""Consent and proactivity on a running worker over the embedded broker: a sensitive profile
change someone else reports waits as a proposal the registry lists and accepts (the user's own
first-person changes: `test_user_statements.py`); an important memory becomes a
`memory.proactivity` record a plain Kafka consumer reads (the worker's app must declare the
topic to produce to it)."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.integration.conftest import (
    ADMIN_KEY, call, make_turn, memories, produce, read_all, unique_user, wait_processed)
from topics.names import MEMORY_PROACTIVITY
from topics.proactivity import ProactivityCandidate

pytestmark = pytest.mark.integration


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_city_change_waits_for_consent_and_the_registry_applies_it(worker):
    user = unique_user("consent")
    turns = [make_turn(user, "1", "I live in Lisbon."),
             make_turn(user, "2", "My friend says I live in Berlin now.",
                       ts="2024-07-01T10:00:00+00:00")]
    run(produce(worker.broker_url, turns))
    run(wait_processed(worker.broker_url, turns))
    assert [m["summary"] for m in run(memories(worker.api_url, user)) if m["state"] == "active"] == [
        "Ana lives in Lisbon."]
    status, body = run(call(worker.api_url, "GET", f"/v1/users/{user}/proposals"))
    assert status == 200, body
    [proposal] = body["items"]
    assert proposal["field"] == "city" and "Berlin" in proposal["proposed_summary"]
    assert proposal["source_turn_ids"] == ["t1:2"] and proposal["expires_at"].startswith("2024-07-08")
    path = f"/v1/users/{user}/proposals/{proposal['id']}/accept?wait=1"
    status, body = run(call(worker.api_url, "POST", path, None, ADMIN_KEY))
    assert status == 200, body
    states = {m["summary"]: m["state"] for m in run(memories(worker.api_url, user))}
    assert states["Ana lives in Lisbon."] == "superseded"
    assert [s for s, state in states.items() if state == "active" and "Berlin" in s]
    assert run(call(worker.api_url, "GET", f"/v1/users/{user}/proposals"))[1]["items"] == []
    assert run(call(worker.api_url, "POST", path, None, ADMIN_KEY))[0] == 404


def test_an_important_memory_reaches_memory_proactivity_with_its_provenance(worker):
    user = unique_user("proactive")
    turns = [make_turn(user, "1", "I lost my job at the bakery today and I feel awful about it.")]
    run(produce(worker.broker_url, turns))
    [raw] = run(read_all(worker.broker_url, MEMORY_PROACTIVITY,
                         lambda v: v.get("user_id") == user, expected=1))
    record = ProactivityCandidate.model_validate(raw)
    [memory] = [m for m in run(memories(worker.api_url, user)) if m["id"] in record.memory_ids]
    assert record.source_turn_ids == memory["source_turn_ids"] == ["t1:1"]
    assert record.scores.proactivity_weight >= record.scores.min_weight
    assert record.candidate_id and record.reason
