"""What a user says in chat takes effect, on a running worker over the embedded broker.

- A sensitive profile change the user states in the first person applies at once (their words
  are the chat acknowledgement of seed 001 §10); one someone else reports waits, and while it
  waits the query serves the old value marked with the change pending.
- "Actually, don't remember this." said as its own turn removes what the turn before it stored,
  when the turns arrive together (a backlog), and a replay of the turns does not bring it back.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.integration.conftest import (
    ADMIN_KEY, call, make_turn, memories, produce, query, unique_user, wait_processed)

pytestmark = pytest.mark.integration

EARLIER, LATER = "2024-07-01T09:00:00+00:00", "2024-07-01T10:00:00+00:00"
"""The latest event time of the integration tests: a partition's lifecycle ages every user's
memories by its watermark (the latest turn seen), so a turn dated before another test's would
find its trivia forgotten, and a proposal dated before it, expired."""


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def by_state(user: str, api_url: str) -> dict[str, list[str]]:
    """The user's memory summaries, by state."""
    out: dict[str, list[str]] = {}
    for m in run(memories(api_url, user)):
        out.setdefault(m["state"], []).append(m["summary"])
    return out


def test_a_city_change_the_user_states_applies_at_once(worker):
    user = unique_user("own-city")
    turns = [make_turn(user, "1", "I live in Lisbon.", ts=EARLIER),
             make_turn(user, "2", "I moved to Berlin last month.", ts=LATER)]
    run(produce(worker.broker_url, turns))
    run(wait_processed(worker.broker_url, turns))
    states = by_state(user, worker.api_url)
    assert states["superseded"] == ["Ana lives in Lisbon."]
    assert [s for s in states["active"] if "Berlin" in s], states
    assert run(call(worker.api_url, "GET", f"/v1/users/{user}/proposals"))[1]["items"] == []
    [top] = run(query(worker.api_url, user, "Where does Ana live?", top_k=1))
    assert "Berlin" in top["summary"] and top["pending_change"] is None


def test_a_reported_city_change_waits_and_the_served_value_says_so(worker):
    user = unique_user("told-city")
    turns = [make_turn(user, "1", "I live in Lisbon.", ts=EARLIER),
             make_turn(user, "2", "My friend says I live in Berlin now.", ts=LATER)]
    run(produce(worker.broker_url, turns))
    run(wait_processed(worker.broker_url, turns))
    [proposal] = run(call(worker.api_url, "GET", f"/v1/users/{user}/proposals"))[1]["items"]
    [top] = run(query(worker.api_url, user, "Where does Ana live?", top_k=1))
    assert top["summary"] == "Ana lives in Lisbon."
    assert top["pending_change"]["proposal_id"] == proposal["id"]
    assert top["pending_change"]["proposed_summary"] == proposal["proposed_summary"]
    assert "Berlin" in top["pending_change"]["proposed_summary"]

    path = f"/v1/users/{user}/proposals/{proposal['id']}/reject?wait=1"
    status, body = run(call(worker.api_url, "POST", path, None, ADMIN_KEY))
    assert status == 200, body
    [top] = run(query(worker.api_url, user, "Where does Ana live?", top_k=1))
    assert top["summary"] == "Ana lives in Lisbon." and top["pending_change"] is None


def test_actually_dont_remember_this_takes_back_the_turn_before_for_good(worker):
    user = unique_user("take-back")
    turns = [make_turn(user, str(i), text, speaker="Rita", ts=LATER) for i, text in enumerate((
        "I love hiking in the mountains.", "My sister Ana lives in Porto and works as a nurse.",
        "Actually, don't remember this."), start=1)]
    run(produce(worker.broker_url, turns))  # together: the command queues behind turn 2's fact
    run(wait_processed(worker.broker_url, turns))
    before = run(memories(worker.api_url, user))
    states = {m["summary"]: m["state"] for m in before}
    [taken_back] = [s for s in states if "Porto" in s]
    assert states[taken_back] == "soft_deleted"
    assert [s for s, state in states.items() if state == "active" and "hiking" in s], states
    assert len([s for s, state in states.items() if state == "active"]) == 1, states

    # Every turn again, then a sentinel on the same key: once it is through, so are they.
    sentinel = make_turn(user, "4", "I started learning the cello in January.", speaker="Rita",
                         ts=LATER)
    run(produce(worker.broker_url, turns + [sentinel]))
    run(wait_processed(worker.broker_url, [sentinel]))
    after = {m["id"]: m for m in run(memories(worker.api_url, user))}
    for m in before:
        assert (after[m["id"]]["state"], after[m["id"]]["version"]) == (m["state"], m["version"])
    items = run(query(worker.api_url, user, "Where does Rita's sister live?", top_k=5))
    assert not [i for i in items if "Porto" in i["summary"]]
