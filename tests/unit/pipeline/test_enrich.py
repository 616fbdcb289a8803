"""Deferred extraction (`LLM_EXTRACTION=deferred`, the default with an LLM in hybrid mode):
ingest stores the rules' facts without asking the model; the enrich stage asks it about a
window of turns together — a thread's turns in one call — and what it adds becomes more
memories of the same turns, through the write policy, once even when the window is asked again."""
from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone
from typing import Any

from streams.app.inprocess import InProcessPipeline
from streams.guarded.llm import GuardedLLM
from streams.memory import ids
from streams.pipeline.enrich import TurnWindow
from streams.pipeline.records import Record
from streams.providers.llm import Task
from tests.unit.providers.conftest import settings
from tests.unit.providers.test_batching import Recording, _fact
from topics import names
from topics.candidates import MODEL_FACT_INDEX
from topics.turns import Turn

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
SAID = ["I adopted a dog named Luna last year.",
        "Hey, how are you?",
        "My sister Marta moved to Porto in March."]


def turns(texts: list[str], seconds: int = 30) -> list[Turn]:
    return [Turn(user_id="ana", thread_id="t1", turn_id=str(i), role="user", speaker="Ana", text=text,
                 ts=T0 + timedelta(seconds=seconds * i))  # type: ignore[arg-type]
            for i, text in enumerate(texts, 1)]


def answer(*items: tuple[int, list[str]]) -> dict[str, Any]:
    return {"turns": [{"n": n, "decision": "semantic" if said else "skip",
                       "facts": [_fact(s) for s in said]} for n, said in items]}


def pipeline_with(provider: Recording, tmp_path: Any, embedder: Any, **overrides: Any) -> InProcessPipeline:
    s = settings(**{"llm_provider": "openai", "table_store": "memory://", "data_dir": tmp_path,
                    "lifecycle_enabled": False, "dedup_batch_size": 1, **overrides})
    return InProcessPipeline(s, embedder, llm=GuardedLLM(provider, s))


def extractions(provider: Recording) -> list[dict[str, Any]]:
    """The extraction calls (dedup asks the model whether two facts are one too)."""
    return [c for c in provider.calls if c["task"] is Task.extract]


def summaries(pipeline: InProcessPipeline) -> set[str]:
    return {m.summary for m in pipeline.store.user_memories("ana")}


async def test_the_rules_store_at_once_and_the_model_is_asked_once_about_the_window(
        tmp_path, minilm_embedder):
    provider = Recording(answer((1, ["Ana's dog Luna is a beagle."]), (2, []),
                                (3, ["Ana calls Marta every Sunday evening."])))
    pipeline = pipeline_with(provider, tmp_path, minilm_embedder)
    said = turns(SAID)

    for turn in said:
        await pipeline.send_turn(turn)
        await pipeline.deliver(flush=False)
    assert provider.calls == [], "a turn's first memories wait for no model"
    by_rules = summaries(pipeline)
    assert any("Luna" in s for s in by_rules) and any("Marta" in s for s in by_rules)

    await pipeline.deliver()  # the window ends

    [call] = extractions(provider)
    assert call["turns"] == 3, "one call for the thread's window"
    assert summaries(pipeline) - by_rules == {"Ana's dog Luna is a beagle.", "Ana calls Marta every Sunday evening."}
    added = [m for m in pipeline.store.user_memories("ana") if m.summary not in by_rules]
    assert {m.id for m in added} == {ids.memory_id("ana", "t1", "1", MODEL_FACT_INDEX),
                                     ids.memory_id("ana", "t1", "3", MODEL_FACT_INDEX)}
    assert all(m.source_turn_ids for m in added)


async def test_a_window_ends_when_it_spans_the_window_seconds_of_the_turns_time(tmp_path, minilm_embedder):
    provider = Recording(answer((1, []), (2, [])))
    pipeline = pipeline_with(provider, tmp_path, minilm_embedder, llm_window_seconds=60)
    for turn in turns(SAID):  # 30 s apart: the third turn spans 60 s
        await pipeline.send_turn(turn)
        await pipeline.deliver(flush=False)
    assert [c["turns"] for c in extractions(provider)] == [3]


async def test_what_the_model_adds_passes_the_write_policy(tmp_path, minilm_embedder):
    provider = Recording(answer((1, ["Ana's password is hunter2.", "Ana's dog Luna is a beagle."])))
    pipeline = pipeline_with(provider, tmp_path, minilm_embedder)
    await pipeline.ingest(turns(SAID[:1]))
    stored = summaries(pipeline)
    assert "Ana's dog Luna is a beagle." in stored
    assert not any("hunter2" in s for s in stored)


async def test_a_fact_the_rules_stored_is_not_added_again(tmp_path, minilm_embedder):
    rules_only = pipeline_with(Recording(answer()), tmp_path / "a", minilm_embedder, llm_provider="none")
    await rules_only.ingest(turns(SAID[:1]))
    [by_rules] = summaries(rules_only)
    provider = Recording(answer((1, [by_rules])))
    pipeline = pipeline_with(provider, tmp_path / "b", minilm_embedder)
    await pipeline.ingest(turns(SAID[:1]))
    assert len(extractions(provider)) == 1 and summaries(pipeline) == {by_rules}
    assert len(pipeline.topics.sent[names.MEMORY_CANDIDATES]) == 1, "nothing more was sent"


async def test_a_window_asked_again_after_a_restart_changes_nothing(tmp_path, minilm_embedder):
    provider = Recording(answer((1, ["Ana's dog Luna is a beagle."])))
    pipeline = pipeline_with(provider, tmp_path, minilm_embedder)
    await pipeline.ingest(turns(SAID[:1]))
    before = {m.id: m.version for m in pipeline.store.user_memories("ana")}
    [record] = pipeline.topics.sent[names.CHAT_TURNS]

    assert pipeline.enrich_stage is not None
    await pipeline.enrich_stage.handle_batch([record])  # redelivered: not committed when it crashed
    await pipeline.deliver()

    assert {m.id: m.version for m in pipeline.store.user_memories("ana")} == before


async def test_a_failing_model_leaves_the_rules_facts_and_a_bad_record_is_skipped(tmp_path, minilm_embedder):
    provider = Recording(RuntimeError("the server went away"))
    pipeline = pipeline_with(provider, tmp_path, minilm_embedder)
    await pipeline.ingest(turns(SAID[:1]))
    assert any("Luna" in s for s in summaries(pipeline))
    assert pipeline.enrich_stage is not None
    bad = Record(names.CHAT_TURNS, 0, 99, b"ana", b"{not json", None)
    assert await pipeline.enrich_stage.handle_batch([bad]) == [0]
    assert names.CHAT_TURNS_DLQ not in pipeline.topics.sent, "ingest's to dead-letter, not enrich's"


async def test_inline_and_replace_ask_in_ingest_and_run_no_enrich_stage(tmp_path, minilm_embedder):
    for i, overrides in enumerate([{"llm_extraction": "inline"}, {"llm_mode": "replace"}]):
        provider = Recording(json.dumps({"turns": []}))
        pipeline = pipeline_with(provider, tmp_path / str(i), minilm_embedder, **overrides)
        await pipeline.send_turn(turns(SAID[:1])[0])
        await pipeline.deliver(flush=False)
        assert pipeline.enrich_stage is None and provider.calls, overrides


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Asker:
    """An `ask` that records each window and finishes only when told to (a slow model)."""

    def __init__(self) -> None:
        self.windows: list[list[int]] = []
        self.started = asyncio.Event()
        self.go = asyncio.Event()
        self.go.set()

    async def __call__(self, items: list[int]) -> None:
        self.windows.append(items)
        self.started.set()
        await self.go.wait()


async def test_a_window_is_handed_over_when_old_full_or_urgent_and_not_before() -> None:
    clock, asker, urgent = Clock(), Asker(), [False]
    window = TurnWindow(asker, seconds=120, turns=3, clock=clock, urgent=lambda: urgent[0])
    window.start()
    try:
        await window.add(1)
        clock.now = 119.9
        await window.add(2)
        await window.tick()
        await window.drain()
        assert asker.windows == [], "not yet old, not full"
        clock.now = 120.0
        await window.tick()
        await window.drain()
        assert asker.windows == [[1, 2]], "old enough"
        for item in (3, 4, 5):
            await window.add(item)
        await window.drain()
        assert asker.windows[-1] == [3, 4, 5], "full"
        await window.add(6)
        urgent[0] = True  # a rebalance: Faust waits for the turns handed out
        await window.tick()
        await window.drain()
        assert asker.windows[-1] == [6]
    finally:
        await window.stop()


async def test_the_next_window_fills_while_one_is_asked_and_add_waits_two_behind() -> None:
    asker = Asker()
    asker.go.clear()
    window = TurnWindow(asker, seconds=3600, turns=1, clock=Clock())
    window.start()
    try:
        await window.add(1)          # being asked (the model is slow)
        await asker.started.wait()
        await window.add(2)          # waits behind it
        third = asyncio.ensure_future(window.add(3))
        await asyncio.sleep(0)
        assert not third.done(), "two windows ahead: the stream waits"
        asker.go.set()
        await third
        await window.drain()
        assert asker.windows == [[1], [2], [3]], "in order, one at a time"
    finally:
        await window.stop()
