"""The passes run by the lifecycle runner inside the worker's own stages (the in-process
pipeline: ingest, dedup, commands), in event time: a fact said in three sessions is promoted, a week of episodes consolidates, and
queries then prefer the consolidated memory."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from streams.settings import Settings
from streams.app.inprocess import InProcessPipeline
from topics.events import MemoryEvent
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


def events(pipeline: InProcessPipeline) -> list[MemoryEvent]:
    return pipeline.sent_events()


async def test_after_a_week_of_sessions_the_fact_is_promoted_and_the_episodes_consolidate(
        tmp_path: Path, minilm_embedder):
    """The runner (`streams.lifecycle.runner`) runs the passes inside the dedup stage, when a
    record moves the event-time watermark a day past the user's last run."""
    settings = Settings(table_store="memory://", data_dir=tmp_path)  # type: ignore[call-arg]
    pipeline = InProcessPipeline(settings, minilm_embedder)
    await pipeline.ingest(week_of_turns())
    await pipeline.ingest([Turn(user_id="ana", thread_id="s7", turn_id="7-0u", role="user",  # type: ignore[arg-type]
                                speaker="Ana", text="I love green tea.", ts=START + timedelta(days=7))])
    state = pipeline.store.state()
    lifecycle = [e for e in events(pipeline) if e.kind in ("promoted", "consolidated", "archived")]

    [promotion] = [e for e in lifecycle if e.kind == "promoted"]
    fact = state.memory(promotion.memory_id)
    assert fact.type == "semantic" and "swimming at the city pool" in fact.summary
    assert {"s0:0-0u", "s2:2-0u", "s4:4-0u"} <= set(fact.source_turn_ids)
    assert promotion.ts == START + timedelta(days=4), "at the third mention, in event time"

    episodes = [m for m in pipeline.store.user_memories("ana")
                if m.type == "episodic" and "episode" in m.tags]
    [made] = [m for m in pipeline.store.user_memories("ana")
              if m.type == "consolidated" and m.is_visible]
    assert len(episodes) == 3 and sorted(made.consolidated_from) == sorted(m.id for m in episodes)
    assert all(m.state == "archived" for m in episodes), "the week's three episodes, one memory"
    archived = {e.memory_id for e in lifecycle if e.kind == "archived"}
    assert {m.id for m in episodes} <= archived
    served = {ref for m in pipeline.store.user_memories("ana") if m.is_visible for ref in m.source_turn_ids}
    assert {"s0:0-1a", "s2:2-1a", "s4:4-1a"} <= served, "the archived episodes' turns are still served"

    hits = await pipeline.query("ana", "What did we discuss about the Lisbon trip?", 3)
    assert [h.memory.id for h in hits if h.memory.type == "consolidated"] == [made.id]
    assert "Alfama" in made.summary and "booked" in made.summary
    assert not {h.memory.id for h in hits} & archived, "archived episodes never reach a query"
