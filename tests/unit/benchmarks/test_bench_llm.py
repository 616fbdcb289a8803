"""`bench locomo --llm`: rules alone and the LLM path on the same turns, side by side, with the
LLM's calls, fallbacks and tokens per turn read from its counters (a fake server answers)."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any
from pathlib import Path

import pytest
from aiohttp import web
from rich.console import Console

from benchmarks.bench_llm import cut, run_llm_bench
from streams.settings import get_settings
from streams.tools.locomo import load_conversation
from tests.unit.providers.conftest import Reply, serve_route
from tests.unit.providers.openai_fake import USAGE, FakeChatAPI

CONV = Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets" / "locomo" / "conv-30.json"
TURNS = 12


@pytest.fixture
def fake_server() -> Iterator[FakeChatAPI]:
    """The fake on a loop of its own thread: the bench runs its own loops (`asyncio.run`)."""
    if not CONV.exists():
        pytest.skip(f"no LoCoMo conversation at {CONV}")
    fake = FakeChatAPI()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    runner: list[web.AppRunner] = []

    async def start() -> None:
        served, url = await serve_route("/v1/chat/completions", fake.handle)
        runner.append(served)
        fake.base_url = f"{url}/v1"
        started.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()))
    thread.start()
    started.wait(60)
    yield fake
    asyncio.run_coroutine_threadsafe(runner[0].cleanup(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(60)


def bench_against(fake_server: FakeChatAPI, monkeypatch: pytest.MonkeyPatch,
                  ingest_batch: int = 1) -> dict[str, Any]:
    """`run_llm_bench` on the first `TURNS` turns with the fake as an OpenAI-compatible server
    (JSON mode, budgets no CPU runs out), the settings as they were afterwards."""
    for name, value in {"LLM_PROVIDER": "openai", "OPENAI_BASE_URL": fake_server.base_url,
                        "OPENAI_RESPONSE_FORMAT": "json_object", "TRIGGER_BUDGET_MS": "600000",
                        "LLM_EXTRACT_BUDGET_MS": "600000"}.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        return run_llm_bench([CONV], Console(quiet=True), max_turns=TURNS, ingest_batch=ingest_batch)
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()


def test_cut_keeps_the_first_turns_and_the_questions_they_answer() -> None:
    if not CONV.exists():
        pytest.skip(f"no LoCoMo conversation at {CONV}")
    conversation = load_conversation(CONV)
    short = cut(conversation, TURNS)
    kept = {t.turn_id for t in short.turns}
    assert short.turns == conversation.turns[:TURNS]
    assert short.questions and all(set(q.evidence) <= kept for q in short.questions)
    assert len(short.questions) < len(conversation.questions)


def test_the_llm_side_beside_the_rules(fake_server: FakeChatAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that says no to everything: in hybrid mode recall stays the rules', every call is
    counted as answered, and the server's tokens come out per turn."""
    fake_server.script(Reply.json({"should_create": False, "confidence": 0.2, "decision": "skip", "facts": [],
                                   "same_fact": False}))
    report = bench_against(fake_server, monkeypatch)

    rules, llm = report["rules"], report["llm"]
    assert report["turns"] == TURNS and report["llm_mode"] == "hybrid"
    assert llm["recall_any"] == rules["recall_any"] and llm["facts_per_turn"] == rules["facts_per_turn"]
    trigger = llm["llm"]["trigger"]
    assert trigger["fallback_share"] == 0.0 and 0 < trigger["calls"] <= TURNS
    assert trigger["turns_asked"] == trigger["calls"], "a turn at a time: a call a turn"
    assert trigger["tokens_in_per_turn"] == round(trigger["calls"] * USAGE["prompt_tokens"] / TURNS, 1)
    assert "llm" not in rules, "the rules side asks no model"
    assert len(fake_server.requests) == sum(figures["calls"] for task, figures in llm["llm"].items()
                                            if task != "tokens_per_turn")
    calls = len(fake_server.requests)
    assert llm["llm"]["tokens_per_turn"] == round(
        calls * (USAGE["prompt_tokens"] + USAGE["completion_tokens"]) / TURNS, 1), \
        "every call's prompt and completion tokens, over the turns replayed"


def test_a_backlog_is_asked_about_a_threads_turns_together(fake_server: FakeChatAPI,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`ingest_batch`: ingest takes the turns 6 at a time, and each question is asked about a
    batch's turns in one call, so there are fewer calls than turns asked."""
    fake_server.script(Reply.json({"turns": [{"n": n, "should_create": False, "confidence": 0.2,
                                              "decision": "skip", "facts": []} for n in range(1, 7)]}))
    report = bench_against(fake_server, monkeypatch, ingest_batch=6)

    rules, llm = report["rules"], report["llm"]
    assert report["ingest_batch"] == 6
    assert llm["recall_any"] == rules["recall_any"] and llm["facts_per_turn"] == rules["facts_per_turn"]
    extract = llm["llm"]["extract"]
    assert extract["fallback_share"] == 0.0
    assert 0 < extract["calls"] <= TURNS // 6 < extract["turns_asked"]
