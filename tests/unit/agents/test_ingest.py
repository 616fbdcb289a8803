"""Faust test_context tests of the ingest stage (real agent, outputs captured)."""
from tests.unit.agents.conftest import turn


async def test_ingest_turns_a_fact_into_candidates(worker, captured):
    async with worker.faust.agents["ingest"].test_context() as agent:
        t = turn("I adopted a dog named Luna last year.")
        await agent.put(t.model_dump_json().encode(), key=b"u1")
    assert captured.candidates, "a fact-bearing turn must yield a candidate"
    c = captured.candidates[0]
    assert "Luna" in c.fact.summary and c.turn.ref == "t1:1"
    assert [e.kind for e in captured.events] == ["candidate"] * len(captured.candidates)
    [progress] = captured.progress  # one per turn from ingest, with its timings
    assert (progress.outcome, progress.fact_count) == ("candidates", len(captured.candidates))
    assert progress.queued_ms is not None and progress.work_ms is not None and progress.work_ms >= 0


async def test_ingest_skips_greetings_and_dead_letters_garbage(worker, captured):
    async with worker.faust.agents["ingest"].test_context() as agent:
        await agent.put(turn("Hi!").model_dump_json().encode(), key=b"u1")
        await agent.put(b"{oops", key=b"u1")
    assert not captured.candidates
    assert [p.outcome for p in captured.progress] == ["skipped"]
    assert [d.reason for d in captured.dead] == ["malformed_json"]


async def test_ingest_never_passes_a_secret_on(worker, captured):
    async with worker.faust.agents["ingest"].test_context() as agent:
        t = turn("My AWS key is AKIAIOSFODNN7EXAMPLE and I love hiking in the Alps.")
        await agent.put(t.model_dump_json().encode(), key=b"u1")
    assert not captured.candidates
    assert all("AKIA" not in e.summary for e in captured.events)


