"""Faust test_context tests of the dedup stage (real agent, in-memory tables)."""
from tests.unit.agents.conftest import turn
from topics.candidates import Candidate, Fact


def candidate(summary: str, turn_id: str, index: int = 0) -> bytes:
    fact = Fact(type="semantic", summary=summary, category="Personal", importance=3,
                tags=["pet"], entities=["Luna"])
    return Candidate(turn=turn("x", turn_id), fact=fact, fact_index=index, fact_count=1,
                     confidence=0.9).model_dump_json().encode()


async def test_dedup_creates_then_merges_a_paraphrase_and_ignores_a_replay(worker, captured):
    async with worker.faust.agents["dedup"].test_context() as agent:
        await agent.put(candidate("Ana has a dog named Luna.", "1"), key=b"u1")
        await agent.put(candidate("Ana has a dog called Luna.", "2"), key=b"u1")
        await agent.put(candidate("Ana has a dog named Luna.", "1"), key=b"u1")  # replay
        await agent.put(candidate("Ana works as a nurse in Lisbon.", "3"), key=b"u1")
    kinds = [e.kind for e in captured.events]
    assert kinds == ["created", "updated", "created", "created"]
    assert [p.outcome for p in captured.progress] == ["created", "updated", "created", "created"]
    # the replay re-sent the first event, identical
    assert captured.events[2] == captured.events[0]
    docs = list(worker.sealed.memory.memories.values())
    luna = next(d for d in docs if "Luna" in d["summary"])
    assert luna["source_turn_ids"] == ["t1:1", "t1:2"]
    assert len(docs) == 2
