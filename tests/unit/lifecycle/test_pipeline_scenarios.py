"""The passes after the worker's own stages (the in-process pipeline: ingest, dedup, commands),
in event time: a fact said in three sessions is promoted, a week of episodes consolidates, and
queries then prefer the consolidated memory."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from streams.app.settings import Settings
from streams.lifecycle.consolidation import ConsolidationConfig, ConsolidationPass
from streams.lifecycle.promotion import PromotionConfig, PromotionPass
from streams.pipeline.inprocess import InProcessPipeline
from topics.turns import Turn

START = datetime(2024, 5, 1, 18, tzinfo=UTC)
SESSIONS = [  # (day, what Ana says, what the assistant settles: an outcome closes an episode)
    (0, ["I went swimming at the city pool this morning.",
         "Today I compared flights for our Lisbon trip in June."],
     "Great, the plan is to fly to Lisbon on June 12 and look for a hotel in Alfama."),
    (2, ["I went swimming at the city pool again this morning.",
         "Today I found a hotel in Alfama for the Lisbon trip."],
     "Done: the Lisbon trip hotel in Alfama is booked for June 12 to June 19."),
    (4, ["I went swimming at the city pool this morning before work.",
         "Yesterday I booked the flights to Lisbon for June 12."],
     "Agreed, the next step for the Lisbon trip is the packing list for Alfama."),
]


def week_of_turns() -> list[Turn]:
    turns = []
    for d, texts, outcome in SESSIONS:
        replies = ["That sounds great!", outcome]
        for i, (text, reply) in enumerate(zip(texts, replies)):
            ts = START + timedelta(days=d, minutes=10 * i)
            turns.append(Turn(user_id="ana", thread_id=f"s{d}", turn_id=f"{d}-{i}u", role="user",  # type: ignore[arg-type]
                              speaker="Ana", text=text, ts=ts))
            turns.append(Turn(user_id="ana", thread_id=f"s{d}", turn_id=f"{d}-{i}a",  # type: ignore[arg-type]
                              role="assistant", speaker="Assistant", text=reply,
                              ts=ts + timedelta(minutes=1)))
    return turns


async def test_after_a_week_of_sessions_the_fact_is_promoted_and_the_episodes_consolidate(
        tmp_path: Path, minilm_embedder):
    settings = Settings(table_store="memory://", data_dir=tmp_path)  # type: ignore[call-arg]
    pipeline = InProcessPipeline(settings, minilm_embedder)
    await pipeline.ingest(week_of_turns())
    state = pipeline.store.state()
    now = START + timedelta(days=7)
    before = {m.id for m in pipeline.store.user_memories("ana") if m.is_visible}

    promoted = await PromotionPass(PromotionConfig.from_settings(settings),
                                   embed=pipeline.services.embed)(state, "ana", now)
    [promotion] = promoted
    fact = state.memory(promotion.memory_id)
    assert fact.type == "semantic" and "swimming at the city pool" in fact.summary
    assert {"s0:0-0u", "s2:2-0u", "s4:4-0u"} <= set(fact.source_turn_ids)

    consolidated = await ConsolidationPass(ConsolidationConfig.from_settings(settings),
                                           llm=pipeline.services.llm,
                                           embed=pipeline.services.embed)(state, "ana", now)
    made = [state.memory(e.memory_id) for e in consolidated if e.kind == "consolidated"]
    archived = {e.memory_id for e in consolidated if e.kind == "archived"}
    assert made and archived and archived <= before
    assert all(set(m.consolidated_from) <= archived for m in made)
    after = {m.id for m in pipeline.store.user_memories("ana") if m.is_visible}
    assert len(after) < len(before), "fewer memories serve the same turns"
    served = {ref for m in pipeline.store.user_memories("ana") if m.is_visible for ref in m.source_turn_ids}
    assert {"s0:0-1a", "s2:2-1a", "s4:4-1a"} <= served, "the archived episodes' turns are still served"

    hits = await pipeline.query("ana", "What did we discuss about the Lisbon trip?", 3)
    assert [h.memory.id for h in hits if h.memory.type == "consolidated"] == [m.id for m in made]
    assert "Alfama" in made[0].summary and "booked" in made[0].summary
    assert not {h.memory.id for h in hits} & archived, "archived episodes never reach a query"
