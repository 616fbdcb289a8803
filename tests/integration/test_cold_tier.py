"""The archive is a cold tier a query reaches (issue 20 item 4), over real HTTP on a worker with
the default settings (lifecycle on): a fact unused for months is archived, not purged; the
registry lists it; a query reaches it when asked, when it points to the past and when the active
memories answer weakly, and says so; a hit counts as an access that brings it back."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from topics.names import MEMORY_EVENTS
from tests.integration.conftest import (
    own_stack,
    call,
    make_turn,
    produce,
    read_all,
    unique_user,
    wait_processed,
)

pytestmark = pytest.mark.integration


# A broker and worker of this module's own: its turns are dated months apart, and it needs its own ageing undisturbed, which would move the session
# worker's event-time watermarks and age other tests' memories (`a_broker`).
broker, worker = own_stack()

CELLO = "I play the cello in a community orchestra."
LATER = [  # 230 days on: the cello fact (importance 2) has decayed into the archive
    ("My sister Marta moved to Porto last month.", "2024-08-18T10:00:00+00:00"),
    ("I started a new job as a nurse at the city hospital.", "2024-08-18T10:05:00+00:00"),
]


def ask(worker: Any, user: str, **body: Any) -> dict[str, Any]:
    request = {"agent": "supervisor", "top_k": 3, **body}
    status, answer = asyncio.run(call(worker.api_url, "POST", f"/v1/users/{user}/query", request))
    assert status == 200, answer
    return answer


def events_of(worker: Any, user: str, kind: str, expected: int = 1) -> list[dict[str, Any]]:
    return asyncio.run(read_all(worker.broker_url, MEMORY_EVENTS,
                                lambda e: e.get("user_id") == user and e.get("kind") == kind,
                                expected))


@pytest.fixture(scope="module")
def user(worker) -> str:
    user = unique_user("cold")
    turns = [make_turn(user, "1", CELLO, ts="2024-01-01T10:00:00+00:00"),
             *(make_turn(user, str(i), text, ts=ts) for i, (text, ts) in enumerate(LATER, 2))]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    events_of(worker, user, "archived")
    return user


def test_an_unused_fact_is_archived_and_the_registry_lists_it(worker, user):
    [archived] = events_of(worker, user, "archived")
    assert archived["meta"]["reason"] == "decay" and "cello" in archived["summary"]
    status, listed = asyncio.run(call(worker.api_url, "GET", f"/v1/users/{user}/memories?state=archived"))
    assert status == 200 and [m["summary"] for m in listed["items"]] == [archived["summary"]]


def test_a_query_reaches_the_archive_when_asked_when_it_points_back_and_when_active_ones_are_weak(
        worker, user):
    weak = ask(worker, user, query="Which instrument does Ana play?", record_access=False)
    assert weak["cold_tier"] == "weak_active"
    [cello] = [i for i in weak["items"] if "cello" in i["text"]]
    assert cello["archived"] is True and cello["text"].startswith("[Personal] (archived) ")

    past = ask(worker, user, query="Do you remember the orchestra?", record_access=False)
    assert past["cold_tier"] == "recall_intent" and any(i["archived"] for i in past["items"])

    never = ask(worker, user, query="Which instrument does Ana play?", include_archived=False,
                record_access=False)
    assert never["cold_tier"] is None and not any(i["archived"] for i in never["items"])

    asked = ask(worker, user, query="Marta Porto", include_archived=True, record_access=False,
                **{"return": "full"})
    assert asked["cold_tier"] == "asked"
    ranks = {i["summary"]: n for n, i in enumerate(asked["items"])}
    assert all(not i["archived"] for i in asked["items"][:1]), "an active match ranks first"
    assert any("cello" in s for s in ranks)


def test_a_hit_in_the_archive_counts_as_an_access_and_brings_the_memory_back(worker, user):
    ask(worker, user, query="What instrument does Ana play?")  # recorded as a read (a touch)
    # Commands of one user apply in order: once a later one has applied (wait=1), the touch has.
    status, active = asyncio.run(call(worker.api_url, "GET", f"/v1/users/{user}/memories?state=active"))
    anchor = active["items"][0]["id"]
    pinned = asyncio.run(call(worker.api_url, "POST", f"/v1/users/{user}/memories/{anchor}/pin?wait=1"))
    assert pinned[0] == 200, pinned
    tomorrow = make_turn(user, "9", "I bought a new bike for the commute.",
                         ts="2024-08-20T10:00:00+00:00")
    asyncio.run(produce(worker.broker_url, [tomorrow]))
    asyncio.run(wait_processed(worker.broker_url, [tomorrow]))
    [restored] = events_of(worker, user, "restored")
    assert restored["meta"]["reason"] == "accessed" and "cello" in restored["summary"]
    answer = ask(worker, user, query="What instrument does Ana play?", record_access=False)
    assert any("cello" in i["text"] and not i["archived"] for i in answer["items"])
