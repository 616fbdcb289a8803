"""Proactivity through the stages the worker runs: a turn with a strongly felt event gives one
record on memory.proactivity with its provenance; feedback that it was ignored backs off the
next one (event time)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from streams.settings import Settings
from streams.app.inprocess import InProcessPipeline
from topics import names
from topics.commands import Command
from topics.proactivity import ProactivityCandidate
from topics.turns import Turn

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)


def turn(turn_id: str, text: str, ts: datetime) -> Turn:
    return Turn(user_id="ana", thread_id="t1", turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts=ts)  # type: ignore[arg-type]


def offers(pipeline: InProcessPipeline) -> list[ProactivityCandidate]:
    return [ProactivityCandidate.model_validate_json(r.value or b"")
            for r in pipeline.topics.sent[names.MEMORY_PROACTIVITY]]


async def test_a_strongly_felt_event_is_offered_with_provenance_and_backs_off(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    await pipeline.ingest([turn("1", "I lost my job at the bakery today and I feel awful about it.", T0),
                           turn("2", "I like tea.", T0 + timedelta(minutes=1))])
    [offer] = offers(pipeline)
    stored = {m.id: m for m in pipeline.store.user_memories("ana")}
    assert offer.memory_ids[0] in stored
    assert offer.source_turn_ids == ["t1:1"]
    assert (offer.reason, offer.tone) == ("check_in", "soft_check_in")
    assert offer.scores.proactivity_weight >= offer.scores.min_weight
    assert not hasattr(offer, "summary")

    # ignored twice: a day later the next strongly felt event still waits (6 h doubled twice)
    for i in range(2):
        await pipeline.dedup_stage.outputs.command(Command(
            command_id=f"fb{i}", kind="proactivity_feedback", user_id="ana", feedback="ignored",
            ts=T0 + timedelta(hours=1)))  # type: ignore[arg-type]
    await pipeline.deliver()
    await pipeline.ingest([turn("3", "My car was stolen today and I am furious and scared.",
                                T0 + timedelta(hours=20))])
    assert len(offers(pipeline)) == 1
    await pipeline.ingest([turn("4", "I failed my driving test this morning and I feel terrible.",
                                T0 + timedelta(hours=25))])
    assert len(offers(pipeline)) == 2
