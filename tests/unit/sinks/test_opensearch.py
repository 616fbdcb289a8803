"""OpenSearch documents and per-item bulk results (a real HTTP server answering `_bulk`)."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from sinks.base import PartialSinkError, PermanentSinkError, TransientSinkError
from sinks.opensearch import OpenSearchDestination, classify_bulk, event_record, records_for_event
from topics.events import MemoryEvent

TS = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


def event(kind: str, memory_id: str = "m1", **meta) -> MemoryEvent:
    return MemoryEvent(event_id=f"e-{kind}-{memory_id}", kind=kind, user_id="ana", thread_id="t1",
                       memory_id=memory_id, rev=1, ts=TS, summary="Ana has a dog named Luna.",
                       category="Personal", meta={"type": "semantic", **meta})


def test_event_documents_follow_seed_001_section_14():
    doc = event_record(event("created", similarity=0.9, reason="new", source_turn_id="t1:0")).document
    assert (doc["node"], doc["op"], doc["status"], doc["sim"], doc["tombstone"]) == (
        "hotpath", "create", "ok", 0.9, False)
    assert event_record(event("candidate")).document["op"] == "classify"
    assert event_record(event("created", type="episodic")).document["node"] == "episodic"
    assert event_record(event("soft_deleted", action="forget")).document["node"] == "worker"
    purged = event_record(MemoryEvent(event_id="p", kind="purged", user_id="ana", thread_id="t1",
                                      memory_id="m1", rev=2, ts=TS, summary="", category="", meta={}))
    assert purged.document["tombstone"] and purged.document["summary"] is None
    assert purged.key == "events:p"


def test_a_purge_deletes_first_and_links_of_neighbours_come_along():
    link = {"id": "l1", "memory_id": "m2", "user_id": "ana", "verb": "LINK", "ts": TS.isoformat(),
            "meta": {"edges": {"m1": 0.7}}}
    add = {"id": "e-created-m1", "memory_id": "m1", "user_id": "ana", "verb": "ADD", "ts": TS.isoformat()}
    records = records_for_event(event("created"), {"m1": [add], "m2": [link]},
                                {"m1": {"related_ids": ["m2"]}})
    assert [r.key for r in records] == ["events:e-created-m1", "audit:e-created-m1", "audit:l1"]
    purge = records_for_event(event("purged"), {}, {})
    assert [(r.op, r.key.split(":")[0]) for r in purge] == [("delete", "purge"), ("upsert", "events")]


def test_bulk_items_are_classified_by_status():
    records = [event_record(event(k)) for k in ("created", "updated", "merged", "restored")]
    response = {"items": [{"index": {"status": 201}},
                          {"index": {"status": 400, "error": {"type": "mapper_parsing_exception",
                                                              "reason": "bad rev"}}},
                          {"index": {"status": 429, "error": {"type": "es_rejected_execution_exception"}}},
                          {"index": {"status": 503, "error": {"type": "unavailable_shards_exception"}}}]}
    outcome = classify_bulk(records, response)
    assert [r.record for r in outcome.rejected] == [records[1]]
    assert outcome.rejected[0].reason == "400 mapper_parsing_exception: bad rev"
    assert outcome.retry == records[2:]


class FakeOpenSearch:
    """An HTTP server answering `_bulk` with the statuses it is given, and `purge` requests."""

    def __init__(self, statuses: list[int] | None = None, status: int = 200) -> None:
        self.statuses = statuses or []
        self.status = status
        self.requests: list[str] = []
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.server = TestServer(app)

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(f"{request.method} {request.path}")
        if self.status != 200:
            return web.json_response({"error": {"type": "x"}}, status=self.status)
        if request.path.endswith("/_bulk"):
            lines = [json.loads(l) for l in (await request.text()).splitlines() if l.strip()]
            items = [{"index": {"status": self.statuses[i] if i < len(self.statuses) else 201}}
                     for i in range(len(lines) // 2)]
            return web.json_response({"errors": True, "items": items})
        return web.json_response({"acknowledged": True, "deleted": 0})

    async def __aenter__(self) -> OpenSearchDestination:
        await self.server.start_server()
        return OpenSearchDestination(str(self.server.make_url("/")), prefix="t")

    async def __aexit__(self, *exc) -> None:
        await self.server.close()


async def test_only_throttled_items_and_what_follows_them_are_retried():
    first = [event_record(event(k)) for k in ("created", "updated")]
    purge_and_after = records_for_event(event("purged"), {}, {})
    fake = FakeOpenSearch(statuses=[201, 429])
    async with fake as dest:
        with pytest.raises(PartialSinkError) as caught:
            await dest.write([*first, *purge_and_after])
        await dest.close()
    assert caught.value.retry == [first[1], *purge_and_after], "the purge waits for the retried write"
    assert fake.requests == ["POST /_bulk"]


@pytest.mark.parametrize(("status", "error"), [(503, TransientSinkError), (429, TransientSinkError),
                                               (403, PermanentSinkError)])
async def test_a_failed_request_maps_to_the_sink_contract(status, error):
    async with FakeOpenSearch(status=status) as dest:
        with pytest.raises(error):
            await dest.write([event_record(event("created"))])
        await dest.close()
