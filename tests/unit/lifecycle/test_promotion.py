"""Promotion (seed 000 §7): a fact repeated 3 times within 60 days becomes semantic."""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from streams.lifecycle.promotion import PromotionConfig, PromotionPass
from streams.settings import LifecycleSettings
from tests.unit.lifecycle.conftest import USER, Memories, day, snapshot

POOL = ["Ana went swimming at the city pool on 1 May 2024.",
        "Ana went swimming at the city pool on 8 May 2024.",
        "Ana swam laps at the city pool on 15 May 2024."]
OTHER = "Ana visited her grandmother in Porto on 10 May 2024."


def said_in_three_sessions(memories: Memories, days: tuple[int, ...] = (1, 8, 15)) -> list[str]:
    ids = [memories.add(text, day(d), thread=f"session-{d}", category="Personal", tags=["swimming"]).id
           for d, text in zip(days, POOL)]
    memories.add(OTHER, day(10), thread="session-10", category="Personal")
    return ids


async def test_a_fact_said_in_three_sessions_is_promoted_with_links_and_provenance(memories):
    ids = said_in_three_sessions(memories)
    events = await PromotionPass(embed=memories.embed)(memories.state, USER, day(16))
    [event] = events
    assert event.kind == "promoted" and event.meta["promoted_from"] == ids
    assert event.meta["mentions"] == 3 and event.meta["needs_review"] is False
    promoted = memories.state.memory(event.memory_id)
    assert promoted.type == "semantic" and promoted.is_visible
    assert promoted.related_ids == ids and set(promoted.relations) == set(ids)
    assert promoted.source_turn_ids == ["session-1:1", "session-8:2", "session-15:3"]
    assert "city pool" in promoted.summary and "2024-05-01" in promoted.summary
    assert "on 1 May 2024" not in promoted.summary, "a repeated fact is not about one date"
    assert "promoted" in promoted.tags and "needs_review" not in promoted.tags
    assert all(memories.state.memory(i).state == "active" for i in ids), "mentions stay episodic"
    assert memories.state.history(promoted.id)[0]["actor"] == "lifecycle"


async def test_two_mentions_are_not_enough(memories):
    memories.add(POOL[0], day(1), category="Personal")
    memories.add(POOL[1], day(8), category="Personal")
    assert await PromotionPass()(memories.state, USER, day(16)) == []


async def test_mentions_older_than_60_days_do_not_count(memories):
    said_in_three_sessions(memories)
    assert await PromotionPass()(memories.state, USER, day(1) + timedelta(days=61)) == []


async def test_a_low_confidence_promotion_is_flagged_for_review(memories):
    said_in_three_sessions(memories)
    config = replace(PromotionConfig.of(LifecycleSettings()), review_below=0.99)
    [event] = await PromotionPass(config)(memories.state, USER, day(16))
    assert event.meta["needs_review"] is True and event.meta["confidence"] < 0.99
    assert "needs_review" in memories.state.memory(event.memory_id).tags


async def test_a_pinned_fact_wins_over_a_promotion(memories):
    # cosine 0.79 to the mentions: under the dedup check band (0.90), so only "pinned wins" holds it
    memories.add("Ana goes swimming at the city pool every week.", day(1), type="semantic", pinned=True)
    said_in_three_sessions(memories)
    assert await PromotionPass()(memories.state, USER, day(16)) == []


async def test_promotes_once_and_a_second_run_changes_nothing(memories):
    said_in_three_sessions(memories)
    promote = PromotionPass()
    assert len(await promote(memories.state, USER, day(16))) == 1
    before = snapshot(memories.state)
    assert await promote(memories.state, USER, day(16)) == []
    assert snapshot(memories.state) == before
    memories.add("Ana went swimming at the city pool on 22 May 2024.", day(22), category="Personal")
    assert await promote(memories.state, USER, day(23)) == [], "a fourth mention promotes nothing new"


async def test_conversation_episodes_are_left_to_consolidation(memories):
    for d in (1, 8, 15):
        memories.add(f"On 2024-05-{d:02d} (W19, 2024) we discussed swimming at the city pool.", day(d))
    assert await PromotionPass()(memories.state, USER, day(16)) == []


async def test_distinct_events_of_one_theme_are_not_a_repeated_fact(memories):
    for d, text in [(1, "On 1 May 2024 Ana compared flights for her Lisbon trip in June."),
                    (3, "On 3 May 2024 Ana booked a hotel in Alfama for the Lisbon trip."),
                    (4, "On 4 May 2024 Ana booked the flights to Lisbon for June 12.")]:
        memories.add(text, day(d), category="Personal")
    assert await PromotionPass()(memories.state, USER, day(5)) == []


POTTERY = [(2, "Ana signed up for a pottery class on 2 May 2024.", ["life_event", "pottery", "class"]),
           (9, "On 9 May 2024 Ana shaped clay on the wheel at a pottery workshop.", ["pottery", "workshop", "clay"]),
           (20, "Ana made a ceramic bowl in pottery class on 20 May 2024.", ["pottery", "bowl", "made"])]
ELSE = [(4, "Ana went to visit her grandmother in Porto on 4 May 2024.", ["went", "grandmother", "porto"]),
        (11, "Ana went to the garage to fix the flat tyre of her bike on 11 May 2024.", ["went", "bike", "tyre"]),
        (14, "Ana went to the library for a novel about sailors on 14 May 2024.", ["went", "novel", "sailors"]),
        (17, "Ana cooked a curry for her friends on 17 May 2024.", ["curry", "cooked", "friends"])]


def add_all(memories: Memories, rows: list[tuple[int, str, list[str]]]) -> list[str]:
    return [memories.add(text, day(d), thread=f"session-{d}", category="Personal", tags=tags).id
            for d, text, tags in rows]


async def test_episodes_on_one_topic_over_several_days_are_promoted_as_a_pattern(memories):
    ids = add_all(memories, POTTERY)
    add_all(memories, ELSE)
    [event] = await PromotionPass(embed=memories.embed)(memories.state, USER, day(21))
    assert event.kind == "promoted" and event.meta["pattern"] == "pottery"
    assert event.meta["promoted_from"] == ids and event.meta["mentions"] == 3
    pattern = memories.state.memory(event.memory_id)
    assert pattern.type == "semantic" and {"promoted", "pattern", "pottery"} <= set(pattern.tags)
    assert pattern.related_ids == ids
    assert pattern.source_turn_ids == ["session-2:1", "session-9:2", "session-20:3"]
    assert pattern.summary.startswith("Recurring, pottery (3 times, 2024-05-02 to 2024-05-20)")
    assert "pottery workshop" in pattern.summary
    assert (event.meta["confidence"] < 0.9) == event.meta["needs_review"]


async def test_a_generic_word_shared_by_unrelated_episodes_is_not_a_pattern(memories):
    add_all(memories, ELSE + POTTERY)  # "went" three times, on three topics
    events = await PromotionPass()(memories.state, USER, day(21))
    assert [e.meta["pattern"] for e in events] == ["pottery"]


async def test_a_pattern_needs_mentions_on_more_than_one_day(memories):
    add_all(memories, [(2, text, tags) for _, text, tags in POTTERY])
    add_all(memories, ELSE)
    promote = PromotionPass()
    assert await promote(memories.state, USER, day(21)) == []
    add_all(memories, [(22, "Ana glazed two mugs at her pottery class on 22 May 2024.", ["pottery", "mugs"])])
    [event] = await promote(memories.state, USER, day(23))
    assert event.meta["pattern"] == "pottery" and event.meta["mentions"] == 4


async def test_a_pattern_is_promoted_once(memories):
    add_all(memories, POTTERY + ELSE)
    promote = PromotionPass()
    assert len(await promote(memories.state, USER, day(21))) == 1
    add_all(memories, [(25, "Ana glazed two mugs at her pottery class on 25 May 2024.", ["pottery", "mugs"])])
    assert await promote(memories.state, USER, day(26)) == [], "the pattern is held already"
