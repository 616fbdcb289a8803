"""OpenSearch destination: memory events and audit entries as time-partitioned indices.

Two index families, each with an index template of explicit mappings (`dynamic: strict`, so a
field nobody mapped is refused and dead-lettered instead of silently widening the mapping):

- `<prefix>-events-YYYY.MM`: one document per `memory.events` record (seed 001 §14 "events":
  node, op, status, memory_id, category, sim, ts), `_id` = the event's deterministic id.
- `<prefix>-audit-YYYY.MM`: one document per audit entry (docs/architecture.md#memory-document verbs, actor, old and new
  value), `_id` = the entry's id (the event id of the change that wrote it).

The month comes from the event time, so a replay writes the same `_id` into the same index:
replays and retries are idempotent. Writes are bulk requests with per-item results: a 400
(mapping error) is `Rejected`, a 429/5xx item is retried alone (`PartialSinkError`).

A user purge is a `delete` record: it deletes every document of the user (delete-by-query)
except content-free tombstones; the purge's own event and audit entry follow as tombstones.

`what_changed` answers "what changed and when" for a user from the audit indices.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from sinks.base import (
    PartialSinkError,
    PermanentSinkError,
    Rejected,
    SinkRecord,
    TransientSinkError,
)
from topics.events import EVENT_KINDS, MemoryEvent

try:
    from opensearchpy import AsyncOpenSearch
    from opensearchpy.exceptions import ConnectionError as OSConnectionError
    from opensearchpy.exceptions import TransportError
except ImportError as exc:  # pragma: no cover - a pinned dependency of memstream
    raise ImportError("the OpenSearch sink needs opensearch-py: pip install 'opensearch-py[async]'") from exc

log = logging.getLogger(__name__)

EVENTS, AUDIT, PURGE = "events", "audit", "purge"

_KW = {"type": "keyword"}
_VALUE = {  # an audit entry's old/new value (streams/memory/audit.py `audit_value`)
    "type": "object", "dynamic": False,
    "properties": {"summary": {"type": "text"}, "state": _KW, "pinned": {"type": "boolean"},
                   "importance": {"type": "integer"}, "category": _KW},
}
EVENTS_MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "event_id": _KW, "kind": _KW, "node": _KW, "op": _KW, "status": _KW,
        "user_id": _KW, "thread_id": _KW, "memory_id": _KW, "memory_type": _KW,
        "rev": {"type": "long"}, "ts": {"type": "date"}, "category": _KW,
        "summary": {"type": "text"}, "sim": {"type": "float"}, "reason": _KW,
        "source_turn_id": _KW, "tombstone": {"type": "boolean"},
        "meta": {"type": "object", "enabled": False},
    },
}
AUDIT_MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "id": _KW, "seq": {"type": "integer"}, "memory_id": _KW, "user_id": _KW, "verb": _KW,
        "actor": _KW, "ts": {"type": "date"}, "rev": {"type": "long"}, "thread_id": _KW,
        "old": _VALUE, "new": _VALUE, "tombstone": {"type": "boolean"},
        "meta": {"type": "object", "enabled": False},
    },
}
MAPPINGS = {EVENTS: EVENTS_MAPPING, AUDIT: AUDIT_MAPPING}



def _node(event: MemoryEvent) -> str:
    """Seed 001 §14 `node`: where the change happened."""
    if event.meta.get("type") == "episodic":
        return "episodic"
    hot = EVENT_KINDS[event.kind].write_path  # each kind's row: topics.events
    return "hotpath" if hot and "action" not in event.meta else "worker"


def _utc(ts: datetime | str) -> datetime:
    value = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
    return value.astimezone(timezone.utc)


def event_record(event: MemoryEvent) -> SinkRecord:
    """The events-index document of one memory event."""
    meta = event.meta
    tombstone = event.kind == "purged"
    doc = {
        "event_id": event.event_id, "kind": event.kind, "node": _node(event),
        "op": EVENT_KINDS[event.kind].sink_op, "status": "error" if event.kind == "error" else "ok",
        "user_id": event.user_id, "thread_id": event.thread_id, "memory_id": event.memory_id,
        "memory_type": meta.get("type"), "rev": event.rev, "ts": event.ts.isoformat(),
        "category": event.category or None, "summary": None if tombstone else event.summary,
        "sim": meta.get("similarity"), "reason": meta.get("reason"),
        "source_turn_id": meta.get("source_turn_id"), "tombstone": tombstone,
        "meta": {} if tombstone else meta,
    }
    return SinkRecord(key=f"{EVENTS}:{event.event_id}", op="upsert", user_id=event.user_id,
                      document=doc)


def audit_record(entry: dict[str, Any], seq: int) -> SinkRecord:
    """The audit-index document of one audit entry (`seq`: its position in the memory's history)."""
    doc = {k: entry.get(k) for k in ("id", "memory_id", "user_id", "verb", "actor", "ts", "rev",
                                     "thread_id", "old", "new")}
    doc.update(seq=seq, tombstone=entry.get("verb") == "PURGE", meta=entry.get("meta") or {})
    return SinkRecord(key=f"{AUDIT}:{entry['id']}", op="upsert", user_id=str(entry["user_id"]),
                      document=doc)


def purge_record(event: MemoryEvent) -> SinkRecord:
    """Delete the user's documents, tombstones excepted (written before the purge's own ones)."""
    return SinkRecord(key=f"{PURGE}:{event.event_id}", op="delete", user_id=event.user_id,
                      document={"user_id": event.user_id})


def records_for_event(event: MemoryEvent, audit: Mapping[str, Any],
                      memories: Mapping[str, Any]) -> list[SinkRecord]:
    """Everything OpenSearch gets for one event, in write order.

    The memory's whole audit history is (re)written with the event, by id, so entries written
    without an event of their own (LINK entries of a neighbour) arrive too; a rewrite of an
    unchanged entry is a no-op for readers. A purge first deletes the user's documents.
    """
    records = [purge_record(event)] if event.kind == "purged" else []
    records.append(event_record(event))
    records += [audit_record(e, i) for i, e in enumerate(audit.get(event.memory_id) or [])]
    for other in (memories.get(event.memory_id) or {}).get("related_ids", []):
        records += [audit_record(e, i) for i, e in enumerate(audit.get(other) or [])
                    if e.get("verb") == "LINK" and event.memory_id in (e.get("meta") or {}).get("edges", {})]
    return records


@dataclass(frozen=True)
class _Outcome:
    rejected: list[Rejected]
    retry: list[SinkRecord]
    reason: str = ""


def classify_bulk(batch: Sequence[SinkRecord], response: dict[str, Any]) -> _Outcome:
    """Per-item results of a bulk request: 429/5xx items to retry, other failures rejected."""
    rejected: list[Rejected] = []
    retry: list[SinkRecord] = []
    reasons: list[str] = []
    for record, item in zip(batch, response.get("items", []), strict=True):
        result = next(iter(item.values()))
        status = int(result.get("status", 500))
        if status < 300:
            continue
        error = result.get("error") or {}
        kind = error.get("type", "error") if isinstance(error, dict) else "error"
        if status == 429 or status >= 500:
            retry.append(record)
            reasons.append(f"{status} {kind}")
        else:
            detail = error.get("reason", "") if isinstance(error, dict) else str(error)
            rejected.append(Rejected(record, f"{status} {kind}: {detail}"[:1000]))
    return _Outcome(rejected, retry, ", ".join(sorted(set(reasons))))


def _raise_for(exc: Exception) -> None:
    """Map a client error to the sink contract (the message never carries a URL or content)."""
    status = getattr(exc, "status_code", None)
    if isinstance(exc, OSConnectionError) or not isinstance(status, int):
        raise TransientSinkError(f"opensearch unreachable ({type(exc).__name__})") from None
    if status == 429 or status >= 500:
        raise TransientSinkError(f"opensearch answered {status}") from None
    raise PermanentSinkError(f"opensearch answered {status} ({getattr(exc, 'error', '')})") from None


class OpenSearchDestination:
    """The OpenSearch destination of the sink contract (`sinks.base.Destination`)."""

    name = "opensearch"

    def __init__(self, url: str, *, prefix: str = "memstream", timeout: float = 10.0,
                 client: AsyncOpenSearch | None = None) -> None:
        self.prefix = prefix
        # Retries are the runner's (backoff, jitter, dead letters): the client makes one attempt.
        self.client = client or AsyncOpenSearch(hosts=[url], timeout=timeout, max_retries=0,
                                                retry_on_timeout=False)

    def pattern(self, family: str) -> str:
        return f"{self.prefix}-{family}-*"

    def index_for(self, family: str, ts: datetime | str) -> str:
        return f"{self.prefix}-{family}-{_utc(ts):%Y.%m}"

    async def start(self) -> None:
        """Install (or update) both index templates; idempotent."""
        for family, mapping in MAPPINGS.items():
            body = {"index_patterns": [self.pattern(family)], "priority": 100,
                    "template": {"settings": {"index": {"number_of_shards": 1}},
                                 "mappings": mapping}}
            try:
                await self.client.indices.put_index_template(name=f"{self.prefix}-{family}",
                                                             body=body)
            except TransportError as exc:
                _raise_for(exc)

    async def close(self) -> None:
        await self.client.close()

    async def write(self, batch: Sequence[SinkRecord]) -> list[Rejected]:
        """Write in order: runs of upserts as bulk requests, each purge as a delete-by-query."""
        rejected: list[Rejected] = []
        i = 0
        while i < len(batch):
            if batch[i].op == "delete":
                run: Sequence[SinkRecord] = batch[i:i + 1]
            else:
                end = next((j for j in range(i, len(batch)) if batch[j].op == "delete"), len(batch))
                run = batch[i:end]
            try:
                if run[0].op == "delete":
                    await self._purge(run[0].user_id)
                else:
                    actions, refused = self._actions(run)
                    rejected += refused
                    sent = [record for record, _ in actions]
                    outcome = classify_bulk(sent, await self._bulk(actions) if sent else {})
                    rejected += outcome.rejected
                    if outcome.retry:  # retry them and everything after, in order
                        raise PartialSinkError(f"bulk items failed: {outcome.reason}",
                                               retry=[*outcome.retry, *batch[i + len(run):]],
                                               rejected=rejected)
            except TransientSinkError as exc:
                if isinstance(exc, PartialSinkError) or (i == 0 and not rejected):
                    raise
                raise PartialSinkError(str(exc), retry=batch[i:], rejected=rejected) from None
            i += len(run)
        return rejected

    def _actions(self, run: Sequence[SinkRecord]
                 ) -> tuple[list[tuple[SinkRecord, dict[str, Any]]], list[Rejected]]:
        """Bulk actions of the run; records with no index to go to are refused here."""
        actions, refused = [], []
        for record in run:
            family, _, _id = record.key.partition(":")
            try:
                if family not in MAPPINGS or not _id:
                    raise ValueError(f"no index family for key prefix {family!r}")
                index = self.index_for(family, record.document["ts"])
            except (KeyError, TypeError, ValueError) as exc:
                refused.append(Rejected(record, f"no target index: {type(exc).__name__}"))
                continue
            actions.append((record, {"index": {"_index": index, "_id": _id}}))
        return actions, refused

    async def _bulk(self, actions: list[tuple[SinkRecord, dict[str, Any]]]) -> dict[str, Any]:
        body: list[dict[str, Any]] = []
        for record, action in actions:
            body += [action, record.document]
        try:
            return await self.client.bulk(body=body)
        except TransportError as exc:
            _raise_for(exc)
            raise  # unreachable: _raise_for always raises

    async def _purge(self, user_id: str) -> None:
        indices = f"{self.pattern(EVENTS)},{self.pattern(AUDIT)}"
        query = {"query": {"bool": {"filter": [{"term": {"user_id": user_id}}],
                                    "must_not": [{"term": {"tombstone": True}}]}}}
        try:
            # Documents written since the last refresh are invisible to delete-by-query.
            await self.client.indices.refresh(index=indices, allow_no_indices=True,
                                              ignore_unavailable=True)
            await self.client.delete_by_query(index=indices, body=query, refresh=True,
                                              conflicts="proceed", allow_no_indices=True,
                                              ignore_unavailable=True)
        except TransportError as exc:
            _raise_for(exc)

    async def what_changed(self, user_id: str, since: datetime, until: datetime,
                           memory_id: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """The user's audit entries with `since <= ts < until` (optionally of one memory), in
        time order: what changed (verb, old and new value), when, and by whom."""
        filters: list[dict[str, Any]] = [
            {"term": {"user_id": user_id}},
            {"range": {"ts": {"gte": _utc(since).isoformat(), "lt": _utc(until).isoformat()}}},
        ]
        if memory_id is not None:
            filters.append({"term": {"memory_id": memory_id}})
        body = {"query": {"bool": {"filter": filters}}, "size": limit,
                "sort": [{"ts": "asc"}, {"seq": "asc"}, {"id": "asc"}]}
        response = await self.client.search(index=self.pattern(AUDIT), body=body,
                                            ignore_unavailable=True, allow_no_indices=True)
        return [hit["_source"] for hit in response["hits"]["hits"]]
