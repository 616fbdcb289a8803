"""The forgetting pass over a user's memories, at event times the test chooses."""
from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np

from streams.lifecycle.forgetting import ForgetConfig, ForgettingPass, due_transitions, purge_time
from streams.memory.decay import days_unused, decay_weight, half_life_days
from streams.memory.model import Memory
from streams.memory.vector_index import encode_vector
from tests import defaults
from tests.unit.memory.test_memory_state import state as memory_state

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

CONFIG = defaults.forget(ttl_days=60, ttl_importance_max=2, purge_after_days=30,
                      archive_weight_min=0.05, archive_unused_days=30, memory_cap=200)


def memory(memory_id: str, importance: int = 2, pinned: bool = False, accessed: datetime = T0,
           kind: str = "semantic") -> Memory:
    return Memory(id=memory_id, user_id="u", type=kind, summary=f"Ana fact {memory_id}.",  # type: ignore[arg-type]
                  importance=importance, pinned=pinned, created_at=T0, updated_at=T0,
                  last_accessed=accessed, thread_id="t1", source_turn_ids=[f"t1:{memory_id}"])


def seeded(*memories: Memory):  # type: ignore[no-untyped-def]
    s = memory_state()
    for position, m in enumerate(memories):
        s.store(m, np.asarray([1.0, position + 1.0], dtype=np.float32) / np.hypot(1, position + 1))
    return s


async def run(s, days: float, config: ForgetConfig = CONFIG):  # type: ignore[no-untyped-def]
    return await ForgettingPass(config)(s, "u", T0 + timedelta(days=days))


async def test_an_unimportant_memory_unused_for_61_days_is_soft_deleted_once_with_a_purge_date():
    s = seeded(memory("old"), memory("important", importance=4), memory("pinned", pinned=True))
    assert await run(s, 59) == [], "not yet 60 days"
    events = await run(s, 61)
    assert [(e.kind, e.memory_id, e.meta["reason"]) for e in events] == [("soft_deleted", "old", "ttl")]
    old = s.memory("old")
    assert old is not None and old.state == "soft_deleted"
    assert old.purge_at == T0 + timedelta(days=91)
    assert s.history("old")[-1]["verb"] == "TTL" and s.history("old")[-1]["actor"] == "lifecycle"
    assert await run(s, 61) == [], "a transition is announced once"
    assert s.changes_since("u", "t1", 0)[0]["kind"] == "soft_deleted"


async def test_the_purge_comes_after_the_window_and_leaves_a_content_free_tombstone():
    with_context = memory("old").model_copy(update={"context_b64": encode_vector(np.ones(2))})
    s = seeded(with_context)
    assert s.tables.memories["old"]["context_b64"] is not None
    await run(s, 61)
    assert await run(s, 90) == [], "still restorable"
    events = await run(s, 91)
    assert [(e.kind, e.summary) for e in events] == [("purged", "")]
    raw = s.tables.memories["old"]
    assert raw["state"] == "purged" and raw["summary"] == "" and raw["source_turn_ids"] == []
    assert raw["embedding_b64"] is None and raw["context_b64"] is None
    assert s.index.user("u").context_b64("old") is None, "the index lets the context go too"
    assert [entry["verb"] for entry in s.history("old")] == ["PURGE"]
    assert all("fact old" not in c["summary"] for c in s.changes_since("u", "t1", 0))
    assert await run(s, 200) == []


async def test_decay_archives_a_memory_whose_weight_fell_and_ttl_is_a_separate_control():
    # importance 3: half-life 180 d, weight 0.5 · 0.5^(d/180) < 0.05 after ~598 days; TTL never
    s = seeded(memory("mid", importance=3), memory("fresh", importance=3, accessed=T0 + timedelta(days=590)))
    assert await run(s, 590) == []
    events = await run(s, 600)
    assert [(e.kind, e.memory_id, e.meta["reason"]) for e in events] == [("archived", "mid", "decay")]
    assert s.memory("mid").state == "archived"  # type: ignore[union-attr]
    assert s.index.user("u").search(np.asarray([1.0, 1.0]) / np.sqrt(2), 5)[0][0].id == "fresh"


async def test_a_consolidated_memorys_original_is_kept_for_the_retention_not_ttl_deleted():
    archived = memory("cold", importance=1).model_copy(update={"state": "archived"})
    summary = memory("sum", importance=4, accessed=T0 + timedelta(days=400)).model_copy(
        update={"type": "consolidated", "consolidated_from": ["cold", "pinned"]})
    s = seeded(archived, summary,
               memory("pinned", importance=1, pinned=True).model_copy(update={"state": "archived"}))
    config = replace(CONFIG, archive_retention_days=180)
    assert await run(s, 61, config) == [], "cold storage is not TTL-deleted at 60 days"
    assert await run(s, 180, config) == [], "kept for the 180-day retention"
    events = await run(s, 181, config)
    assert [(e.kind, e.memory_id, e.meta["reason"]) for e in events] == [
        ("soft_deleted", "cold", "archive_retention")]
    assert s.memory("cold").purge_at == T0 + timedelta(days=211)  # type: ignore[union-attr]


def test_decay_weight_follows_the_seed_half_lives():
    assert [half_life_days(i) for i in (1, 2, 3, 4, 5)] == [30, 90, 180, 180, 365]
    m = memory("x", importance=5)
    assert decay_weight(m, T0) == 1.0
    assert abs(decay_weight(m, T0 + timedelta(days=365)) - 0.5) < 1e-9


async def test_the_cap_evicts_lowest_weight_then_oldest_and_never_a_pinned_memory():
    config = defaults.forget(ttl_days=10_000, archive_unused_days=10_000, memory_cap=3)
    s = seeded(memory("pinned-old", importance=1, pinned=True, accessed=T0),
               memory("weak", importance=2, accessed=T0 + timedelta(days=5)),
               memory("weak-older", importance=2, accessed=T0 + timedelta(days=4)),
               memory("strong", importance=5, accessed=T0),
               memory("episode", importance=1, kind="episodic"))
    events = await run(s, 6, config)
    assert [(e.kind, e.memory_id, e.meta["reason"]) for e in events] == [
        ("archived", "weak-older", "memory_cap")]
    assert s.memory("weak-older").state == "archived", "into the cold tier, not towards a purge"  # type: ignore[union-attr]
    assert s.memory("pinned-old").state == "active"  # type: ignore[union-attr]
    assert s.memory("episode").state == "active", "the cap counts semantic memories"  # type: ignore[union-attr]
    assert await run(s, 6, config) == []


async def test_a_run_makes_at_most_max_changes_and_the_rest_wait():
    s = seeded(*(memory(f"m{i}") for i in range(5)))
    config = defaults.forget(ttl_importance_max=2, max_changes=2)
    assert len(await run(s, 61, config)) == 2
    assert len(await run(s, 61, config)) == 2
    assert len(await run(s, 61, config)) == 1


async def test_a_memory_makes_one_transition_per_run():
    # importance 1: its decay weight is 0, so it is due for archiving and for the TTL at once
    s = seeded(memory("trivial", importance=1))
    events = await run(s, 61)
    assert [e.kind for e in events] == ["soft_deleted"]
    assert s.memory("trivial").state == "soft_deleted"  # type: ignore[union-attr]


async def test_a_transition_keeps_the_memorys_own_edges_only():
    """An edge is stored once, on the memory that made it: soft-deleting the other end must not
    copy it into that one's document."""
    linker = memory("linker", importance=4).model_copy(update={"relations": {"old": 0.8}})
    s = seeded(memory("old"), linker)
    assert "linker" in s.index.user("u").docs["old"].relations, "served with its incoming edge"
    await run(s, 61)
    assert s.memory("old").state == "soft_deleted"  # type: ignore[union-attr]
    assert s.memory("old").relations == {}  # type: ignore[union-attr]


async def test_by_default_only_trivia_ages_towards_a_purge_and_the_archive_is_kept():
    """ForgetConfig's defaults (the settings' own): the TTL takes importance 1 (small talk) only;
    a plain fact decays into the archive and stays there, however long it is unused."""
    s = seeded(memory("small-talk", importance=1), memory("fact", importance=2))
    events = await run(s, 75, defaults.forget())
    assert [(e.kind, e.memory_id, e.meta["reason"]) for e in events] == [
        ("soft_deleted", "small-talk", "ttl")]
    # importance 2: half-life 90 d, weight 0.25 · 0.5^(d/90) < 0.05 after ~209 days
    events = await run(s, 215, defaults.forget())
    assert [(e.kind, e.memory_id) for e in events] == [("purged", "small-talk"), ("archived", "fact")]
    assert await run(s, 2000, defaults.forget()) == [], "no retention window unless one is set"
    assert s.memory("fact").state == "archived"  # type: ignore[union-attr]


async def test_an_archived_memory_read_again_returns_to_the_active_tier():
    config = defaults.forget()
    s = seeded(memory("fact", importance=2))
    await run(s, 215, config)
    assert s.memory("fact").state == "archived"  # type: ignore[union-attr]
    assert await run(s, 216, config) == [], "unread: it stays in the archive"
    read = s.memory("fact").model_copy(update={"last_accessed": T0 + timedelta(days=217)})  # type: ignore[union-attr]
    s.store(read)
    events = await run(s, 218, config)
    assert [(e.kind, e.memory_id, e.meta["reason"]) for e in events] == [("restored", "fact", "accessed")]
    assert s.memory("fact").state == "active"  # type: ignore[union-attr]
    assert await run(s, 219, config) == [], "read a day ago: not due for the archive again"


async def test_a_consolidated_memorys_original_read_again_stays_archived():
    original = memory("episode", importance=2, kind="episodic").model_copy(update={
        "state": "archived", "last_accessed": T0 + timedelta(days=2)})
    summary = memory("sum", importance=4, accessed=T0 + timedelta(days=2)).model_copy(
        update={"type": "consolidated", "consolidated_from": ["episode"]})
    s = seeded(original, summary)
    assert [e.kind for e in await run(s, 3)] == [], "the consolidated memory answers for it"


def test_one_pass_finds_each_transition_as_the_module_doc_states_it():
    """`due_transitions` reads every rule in one pass: over every mix of state, pinning,
    importance, age, archive time, purge date, replacement and consolidation, each list holds
    exactly the memories its rule (written out here one rule at a time) names, in id order."""
    now = T0 + timedelta(days=400)
    config = replace(CONFIG, archive_retention_days=90)
    memories = []
    for n, (state, pinned, importance, unused, archived_ago, purge_at, superseded, read_after) in \
            enumerate(itertools.product(("active", "archived", "soft_deleted", "superseded", "purged"),
                                        (False, True), (1, 2, 3, 5), (10, 30, 45, 60, 70, 300),
                                        (20, 120), (None, -1, 1), (None, "m-new"), (False, True))):
        updated = now - timedelta(days=archived_ago)
        accessed = (updated + timedelta(days=1) if read_after
                    else now - timedelta(days=unused))
        memories.append(Memory(
            id=f"m{n:05d}", user_id="u", type="semantic", summary="Ana fact.", state=state,
            pinned=pinned, importance=importance, created_at=T0, updated_at=updated,
            last_accessed=accessed, superseded_by=superseded,
            purge_at=None if purge_at is None else now + timedelta(days=purge_at)))
    consolidated = Memory(id="m99999", user_id="u", type="consolidated", summary="Ana facts.",
                          created_at=T0, updated_at=T0, last_accessed=now,
                          consolidated_from=[m.id for m in memories[::7]])
    memories.append(consolidated)

    due = due_transitions(memories, now, config)

    assert due.kept == set(consolidated.consolidated_from)
    assert due.purge == [m for m in memories if m.state == "soft_deleted" and not m.pinned
                         and purge_time(m, config) <= now]
    assert due.ttl == [m for m in memories if m.state in ("active", "archived") and not m.pinned
                       and m.importance <= config.ttl_importance_max
                       and days_unused(m, now) > config.ttl_days]
    assert due.retention == [m for m in memories if m.state == "archived" and not m.pinned
                             and now - m.updated_at > timedelta(days=90)]
    assert due.rewarm == [m for m in memories if m.state == "archived" and m.superseded_by is None
                          and m.last_accessed > m.updated_at]
    assert due.archive == [m for m in memories if m.state == "active" and not m.pinned
                           and days_unused(m, now) > config.archive_unused_days
                           and decay_weight(m, now) < config.archive_weight_min]
    assert all([due.purge, due.ttl, due.retention, due.rewarm, due.archive])
