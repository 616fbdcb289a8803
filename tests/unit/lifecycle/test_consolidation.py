"""Consolidation (seed 000 §4, 001 §4): a week of episodes becomes one consolidated memory."""
from __future__ import annotations

from dataclasses import replace

from streams.lifecycle.consolidation import ConsolidationConfig, ConsolidationPass, fingerprint
from streams.lifecycle.pass_kit import vectors_of
from streams.memory.model import Memory
from streams.memory.vector_index import VectorIndex, decode_vector
from streams.guarded.llm import GuardedLLM
from streams.read.delta import render_delta
from streams.settings import LifecycleSettings
from tests.unit.lifecycle.conftest import USER, FakeMessagesAPI, Memories, Reply, day, snapshot

TRIP = [
    (1, "On 2024-05-01 (W18, 2024) we discussed planning a trip to Lisbon. Approach: compared "
        "flights and picked dates in June."),
    (2, "On 2024-05-02 (W18, 2024) we discussed the Lisbon trip budget. Approach: listed hotel "
        "options in Alfama."),
    (4, "On 2024-05-04 (W18, 2024) we discussed booking the Lisbon trip. Approach: Ana booked "
        "the flight and a hotel in Alfama."),
]
BREAD = (3, "On 2024-05-03 (W18, 2024) we discussed Ana's sourdough bread recipe. Approach: "
            "adjusted hydration.")
LATER = (20, "On 2024-05-20 (W21, 2024) we discussed what to pack for Lisbon. Approach: made a "
             "packing list.")


def add_week(memories: Memories) -> dict[int, str]:
    return {d: memories.add(text, day(d), thread=f"s{d}").id for d, text in [*TRIP, BREAD, LATER]}


async def test_a_week_of_episodes_consolidates_into_one_memory_and_archives_the_originals(memories):
    ids = add_week(memories)
    state = memories.state
    events = await ConsolidationPass(embed=memories.embed)(state, USER, day(21))

    [made] = [e for e in events if e.kind == "consolidated"]
    consolidated = state.memory(made.memory_id)
    trip = [ids[1], ids[2], ids[4]]
    assert consolidated.type == "consolidated" and consolidated.consolidated_from == trip
    assert consolidated.source_turn_ids == ["s1:1", "s2:2", "s4:3"], "provenance merged in time order"
    assert "2024-05-01" in consolidated.summary and "2024-05-04" in consolidated.summary
    assert "booked the flight" in consolidated.summary, "the outcome (last episode) is kept"
    assert len(consolidated.summary) <= 280 and consolidated.is_visible
    assert sorted(e.memory_id for e in events if e.kind == "archived") == sorted(trip)
    assert all(state.memory(i).state == "archived" for i in trip)
    assert state.memory(ids[3]).is_visible, "another theme is not merged"
    assert state.memory(ids[20]).is_visible, "an episode outside the 7-day window is not merged"
    assert state.history(ids[1])[-1]["actor"] == "lifecycle"
    assert state.history(ids[1])[-1]["verb"] == "ARCHIVE"
    assert [e.meta["writer"] for e in events if e.kind == "consolidated"] == ["rules"]
    visible_ids = {m.id for m in state.index.user(USER).docs.values() if m.is_visible}
    assert visible_ids == {consolidated.id, ids[3], ids[20]}


async def test_a_consolidated_memory_is_still_found_after_a_restart(memories):
    """A restart rebuilds the index from the stored documents: the consolidated memory's must
    carry its vector (a document stored without one drops out of the index)."""
    add_week(memories)
    state = memories.state
    events = await ConsolidationPass(embed=memories.embed)(state, USER, day(21))
    [made] = [e.memory_id for e in events if e.kind == "consolidated"]
    vector = state.index.user(USER).vector_b64(made)

    rebuilt = VectorIndex(state.index.dim)
    rebuilt.rebuild(Memory.model_validate(raw) for raw in state.tables.memories.values())
    assert rebuilt.user(USER).vector_b64(made) == vector
    [(hit, _)] = rebuilt.user(USER).search(decode_vector(vector), 1)
    assert hit.id == made


async def test_a_second_run_at_the_same_time_changes_nothing(memories):
    add_week(memories)
    consolidate = ConsolidationPass(embed=memories.embed)
    assert await consolidate(memories.state, USER, day(21))
    before = snapshot(memories.state)
    assert await consolidate(memories.state, USER, day(21)) == []
    assert snapshot(memories.state) == before


async def test_runs_at_most_once_per_event_time_day(memories):
    consolidate = ConsolidationPass(embed=memories.embed)
    memories.add(TRIP[0][1], day(1))
    assert await consolidate(memories.state, USER, day(1)) == []  # one episode: nothing to do
    memories.add(TRIP[1][1], day(1, hour=18))
    assert await consolidate(memories.state, USER, day(1, hour=20)) == [], "same day: not due"
    assert [e.kind for e in await consolidate(memories.state, USER, day(2))][0] == "consolidated"


async def test_the_cluster_cap_defers_the_rest_to_a_later_day(memories):
    add_week(memories)
    memories.add("On 2024-05-19 (W20, 2024) we discussed the Lisbon packing list. Approach: "
                 "added sunscreen.", day(19))
    config = replace(ConsolidationConfig.of(LifecycleSettings()), max_clusters=1)
    first = await ConsolidationPass(config)(memories.state, USER, day(21))
    assert sum(e.kind == "consolidated" for e in first) == 1
    second = await ConsolidationPass(config)(memories.state, USER, day(22))
    assert sum(e.kind == "consolidated" for e in second) == 1, "the deferred cluster is made next day"


async def test_a_fingerprinted_pair_is_not_rechecked_for_14_days(memories):
    a = memories.add(TRIP[0][1], day(1))
    b = memories.add(TRIP[1][1], day(2))
    vectors = vectors_of(memories.state, USER, [a, b])
    fp = fingerprint(a.id, b.id, float(vectors[0] @ vectors[1]))
    memories.state.tables.users[USER] = {**memories.state.tables.users[USER],
                                         "consolidation": {"fingerprints": {fp: day(2).isoformat()}}}
    consolidate = ConsolidationPass()
    assert await consolidate(memories.state, USER, day(3)) == []
    assert await consolidate(memories.state, USER, day(15)) == []
    events = await consolidate(memories.state, USER, day(16))
    assert [e.kind for e in events] == ["consolidated", "archived", "archived"]
    assert fp not in memories.state.tables.users[USER]["consolidation"]["fingerprints"]


async def test_a_pair_the_window_keeps_apart_is_fingerprinted(memories):
    for d, text in TRIP:
        memories.add(text, day(d))
    config = replace(ConsolidationConfig.of(LifecycleSettings()), max_cluster_size=2)
    events = await ConsolidationPass(config)(memories.state, USER, day(5))
    assert sum(e.kind == "consolidated" for e in events) == 1
    assert memories.state.tables.users[USER]["consolidation"]["fingerprints"], \
        "the pairs the size cap refused are remembered"


async def test_pinned_episodes_are_never_consolidated(memories):
    memories.add(TRIP[0][1], day(1), pinned=True)
    memories.add(TRIP[1][1], day(2))
    assert await ConsolidationPass()(memories.state, USER, day(3)) == []


async def test_with_an_llm_the_model_writes_the_summary(memories, fake_llm: GuardedLLM,
                                                        fake_api: FakeMessagesAPI):
    for d, text in TRIP:
        memories.add(text, day(d))
    summary = ("Between 2024-05-01 and 2024-05-04 Ana planned a June trip to Lisbon and booked "
               "the flight and a hotel in Alfama.")
    fake_api.script(Reply.json({"summary": summary}))
    events = await ConsolidationPass(llm=fake_llm, embed=memories.embed)(memories.state, USER, day(5))
    [made] = [e for e in events if e.kind == "consolidated"]
    assert made.summary == summary and made.meta["writer"] == "llm"
    sent = fake_api.requests[0]["body"]
    assert "2024-05-02" in sent["messages"][0]["content"] and sent["max_tokens"] == 200


async def test_an_invalid_llm_answer_falls_back_to_the_rules(memories, fake_llm: GuardedLLM,
                                                             fake_api: FakeMessagesAPI):
    for d, text in TRIP:
        memories.add(text, day(d))
    fake_api.script(Reply.json({"summary": "I think my user went to Lisbon."}))  # first person
    events = await ConsolidationPass(llm=fake_llm)(memories.state, USER, day(5))
    [made] = [e for e in events if e.kind == "consolidated"]
    assert made.meta["writer"] == "rules" and made.summary.startswith("Between 2024-05-01 and 2024-05-04")


async def test_the_delta_header_shows_the_consolidation(memories):
    add_week(memories)
    events = await ConsolidationPass()(memories.state, USER, day(21))
    made = next(e for e in events if e.kind == "consolidated")
    rev = made.rev - 1
    changes = memories.state.changes_since(USER, made.thread_id, rev)
    assert "⊕consolidated: [Conversation_Summary] Between 2024-05-01" in render_delta(rev, changes)


async def test_a_later_episode_of_the_theme_joins_yesterdays_consolidated_memory(memories):
    first, second = (memories.add(text, day(d)).id for d, text in TRIP[:2])
    consolidate = ConsolidationPass()
    [made, *_] = await consolidate(memories.state, USER, day(3))
    third = memories.add(TRIP[2][1], day(4)).id
    events = await consolidate(memories.state, USER, day(5))
    [again] = [e for e in events if e.kind == "consolidated"]
    merged = memories.state.memory(again.memory_id)
    assert merged.consolidated_from == [first, second, third]
    assert merged.source_turn_ids == ["t1:1", "t1:2", "t1:3"]
    assert {(e.memory_id, e.meta["reason"]) for e in events if e.kind == "archived"} == {
        (made.memory_id, "reconsolidated"), (third, "consolidated")}
    assert memories.state.memory(made.memory_id).state == "archived"
