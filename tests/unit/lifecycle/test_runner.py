"""The lifecycle runner in the in-process pipeline (the worker's stages without Kafka): turns
whose event times the test sets, idle users aged by the partition's watermark, passes that fail."""
from __future__ import annotations

import base64
from datetime import datetime, timedelta, timezone

import pytest

from streams.lifecycle.runner import open_run
from streams.privacy import table_values
from streams.settings import Settings
from streams.lifecycle.passes import ordered
from streams.memory.state import MemoryState
from streams.observability.metrics import REGISTRY
from streams.app.inprocess import InProcessPipeline
from topics import names
from topics.events import MemoryEvent
from topics.turns import Turn

T0 = datetime(2024, 1, 1, 9, tzinfo=timezone.utc)


def turn(user: str, turn_id: str, text: str, days: float) -> Turn:
    return Turn(user_id=user, thread_id="t1", turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts=T0 + timedelta(days=days))  # type: ignore[arg-type]


def events(pipeline: InProcessPipeline) -> list[MemoryEvent]:
    return pipeline.sent_events()


def pipeline(tmp_path, embedder, passes=(), **settings) -> InProcessPipeline:  # type: ignore[no-untyped-def]
    return InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path, **settings),
                             embedder, passes)


class Recording:
    """A pass that notes when it ran; `fail` makes it raise."""

    def __init__(self, name: str, fail: bool = False) -> None:
        self.name = name
        self.fail = fail
        self.runs: list[tuple[str, datetime]] = []

    async def __call__(self, state: MemoryState, user_id: str, now: datetime) -> list[MemoryEvent]:
        self.runs.append((user_id, now))
        if self.fail:
            raise RuntimeError("boom")
        return []


async def test_an_idle_user_is_aged_by_the_other_users_of_the_partition(tmp_path, minilm_embedder):
    p = pipeline(tmp_path, minilm_embedder)
    await p.ingest([turn("idle", "1", "I play the cello.", 0)])
    await p.ingest([turn("busy", "1", "I drive a red Toyota.", 211),
                    turn("busy", "2", "My sister Marta lives in Porto.", 241)])
    cello = next(m for m in p.store.user_memories("idle"))
    assert cello.importance == 2
    assert cello.state == "archived", "the idle user never spoke again, and still aged"
    kinds = [(e.user_id, e.kind, e.meta.get("reason")) for e in events(p)]
    # importance 2: archived once its decay weight, 0.25 · 0.5^(days / 90), is under 0.05
    assert kinds.count(("idle", "archived", "decay")) == 1
    assert not [k for k in kinds if k[0] == "idle" and k[1] == "soft_deleted"], "a fact is not TTL'd"
    [hit] = await p.query("idle", "What instrument does Ana play?", 5)
    assert hit.memory.id == cello.id and hit.memory.is_archived, "the cold tier answers"


async def test_passes_run_in_the_contract_order_once_per_period_at_the_watermark(tmp_path, minilm_embedder):
    later = [Recording("insights"), Recording("consolidation"), Recording("promotion")]
    assert [x.name for x in ordered(later)] == ["promotion", "consolidation", "insights"]
    insights = later[0]
    p = pipeline(tmp_path, minilm_embedder, passes=later)
    await p.ingest([turn("u", str(i), f"I visited city number {i} today.", i * 0.25) for i in range(6)])
    assert [now for _, now in insights.runs] == [T0, T0 + timedelta(days=1)], \
        "once per event-time day, at the watermark, never the wall clock"


async def test_a_failing_pass_is_counted_and_the_others_and_the_partition_go_on(tmp_path, minilm_embedder):
    before = REGISTRY.get_sample_value("memstream_lifecycle_errors_total",
                                       {"lifecycle_pass": "promotion", "error": "RuntimeError"}) or 0
    failing, after = Recording("promotion", fail=True), Recording("insights")
    p = pipeline(tmp_path, minilm_embedder, passes=[failing, after])
    await p.ingest([turn("u", "1", "I play the cello.", 0), turn("u", "2", "I drive a red Toyota.", 2)])
    assert len(failing.runs) == 2 and len(after.runs) == 2
    assert p.outcomes()["created"] == 2
    assert REGISTRY.get_sample_value("memstream_lifecycle_errors_total",
                                     {"lifecycle_pass": "promotion", "error": "RuntimeError"}) == before + 2


async def test_a_replay_in_other_batches_makes_the_same_transitions(tmp_path, minilm_embedder):
    turns = [turn("idle", "1", "I play the cello.", 0), turn("idle", "2", "I like green tea.", 0.1),
             *(turn("busy", str(i), f"I visited city number {i} today.", 20 + i * 9) for i in range(10))]
    runs = []
    for batch in (1, 7):
        p = pipeline(tmp_path / str(batch), minilm_embedder, dedup_batch_size=batch,
                     ttl_importance_max=2)
        await p.ingest(turns)
        runs.append([(e.event_id, e.kind, e.ts) for e in events(p)
                     if e.user_id == "idle" and e.kind in ("archived", "soft_deleted", "purged")])
    assert runs[0] == runs[1] and any(kind == "soft_deleted" for _, kind, _ in runs[0])


async def test_a_redelivered_record_re_sends_the_lifecycle_events_it_made(tmp_path, minilm_embedder):
    p = pipeline(tmp_path, minilm_embedder, ttl_importance_max=2)
    await p.ingest([turn("idle", "1", "I play the cello.", 0), turn("busy", "1", "I drive a red Toyota.", 61)])
    made = [e for e in events(p) if e.kind == "soft_deleted"]
    assert len(made) == 1
    last = p.topics.sent[names.MEMORY_CANDIDATES][-1]
    # the worker was killed before committing: the last record comes again
    await p.dedup_stage.handle_batch([last])
    again = [e for e in events(p) if e.kind == "soft_deleted"]
    assert again == made * 2, "the same event (same id) again, nothing new made"


def end_state(p: InProcessPipeline, user: str) -> dict[str, tuple]:
    """Each memory of `user` as stored, with its audit history."""
    current = p.store.state()
    return {m.id: (m.model_dump(mode="json", exclude={"embedding_b64"}), current.history(m.id))
            for m in p.store.user_memories(user)}


def keep_runs_as_before(p: InProcessPipeline) -> int:
    """Rewrite the runs of every outbox entry as the version before kept them (a JSON `Sealed`
    envelope of the run's JSON); return how many."""
    sealer = p.sealed.sealer
    rewritten = 0
    for key, entry in list(p.lifecycle_table.items()):
        if isinstance(entry, dict) and entry.get("runs"):
            users = [table_values.unpack(base64.b64decode(run)).user_id for run in entry["runs"]]
            entry["runs"] = [sealer.seal(user, open_run(sealer, run)).model_dump(mode="json")
                             for user, run in zip(users, entry["runs"])]
            rewritten += len(users)
    return rewritten


@pytest.mark.parametrize("outbox_form", ["now", "before"])
async def test_a_redelivered_record_makes_again_the_lifecycle_writes_that_did_not_land(
        tmp_path, minilm_embedder, outbox_form):
    """A kill after the record's outbox entry landed but before its writes to the memory tables
    did (separate changelog topics): the redelivered record must not run the passes again (it
    would find nothing due, the user's last run being noted) but make the writes it made; an
    entry kept by the version before (`outbox_form`) as well."""
    turns = [turn("idle", "1", "I play the cello.", 0), turn("busy", "1", "I drive a red Toyota.", 61)]
    reference = pipeline(tmp_path / "reference", minilm_embedder, ttl_importance_max=2)
    await reference.ingest(turns)
    assert [m.state for m in reference.store.user_memories("idle")] == ["soft_deleted"]

    p = pipeline(tmp_path / "killed", minilm_embedder, ttl_importance_max=2)
    await p.ingest(turns[:1])
    before = {name: dict(p.raw_tables[name]) for name in ("memories", "audit", "users", "thread_revs")}
    await p.ingest(turns[1:])
    for name, table in before.items():  # the last record's writes to these tables were lost
        p.raw_tables[name].clear()
        p.raw_tables[name].update(table)
    p.store.mark_stale()  # a restart rebuilds the index from the tables
    if outbox_form == "before":
        assert keep_runs_as_before(p) > 0
    assert [m.state for m in p.store.user_memories("idle")] == ["active"]
    sent = len(events(p))
    redelivered = REGISTRY.get_sample_value("memstream_lifecycle_redelivered_total",
                                            {"what": "records"}) or 0
    await p.dedup_stage.handle_batch([p.topics.sent[names.MEMORY_CANDIDATES][-1]])
    assert REGISTRY.get_sample_value("memstream_lifecycle_redelivered_total",
                                     {"what": "records"}) == redelivered + 1
    await p.store.ready()

    assert end_state(p, "idle") == end_state(reference, "idle")
    assert end_state(p, "busy") == end_state(reference, "busy")
    assert [e.kind for e in events(p)[sent:] if e.user_id == "idle"] == ["soft_deleted"], \
        "its events are sent again"
