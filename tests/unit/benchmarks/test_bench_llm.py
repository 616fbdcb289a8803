"""`bench locomo --llm`: rules alone and the LLM path on the same turns, side by side, with the
LLM's calls, fallbacks and tokens per turn read from its counters (a fake server answers)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from pathlib import Path

import pytest
from rich.console import Console

from benchmarks.bench_llm import cut, run_llm_bench
from streams.settings import get_settings
from streams.tools.locomo import TURN_SPACING, load_conversation
from tests.unit.providers.conftest import Reply
from tests.unit.providers.openai_fake import USAGE, FakeChatAPI, fake_chat_in_thread

CONV = Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets" / "locomo" / "conv-30.json"
TURNS = 12


@pytest.fixture
def fake_server() -> Iterator[FakeChatAPI]:
    """The fake on a loop of its own thread: the bench runs its own loops (`asyncio.run`)."""
    if not CONV.exists():
        pytest.skip(f"no LoCoMo conversation at {CONV}")
    with fake_chat_in_thread() as fake:
        yield fake


def bench_against(fake_server: FakeChatAPI, monkeypatch: pytest.MonkeyPatch,
                  ingest_batch: int = 1, **env: str) -> dict[str, Any]:
    """`run_llm_bench` on the first `TURNS` turns with the fake as an OpenAI-compatible server
    (JSON mode, budgets no CPU runs out; `env` besides), the settings as they were afterwards."""
    for name, value in {"LLM_PROVIDER": "openai", "OPENAI_BASE_URL": fake_server.base_url,
                        "OPENAI_RESPONSE_FORMAT": "json_object", "TRIGGER_BUDGET_MS": "600000",
                        "LLM_EXTRACT_BUDGET_MS": "600000", **env}.items():
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


def skip_all(turns: int) -> Reply:
    """A model that says no to every turn of a call of up to `turns`."""
    return Reply.json({"turns": [{"n": n, "should_create": False, "confidence": 0.2, "decision": "skip",
                                  "facts": []} for n in range(1, turns + 1)]})


def test_by_default_the_model_is_asked_about_a_window_of_turns(fake_server: FakeChatAPI,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Deferred (the default): the rules store every turn at once, and the model is asked about
    the window's turns together, `LLM_BATCH_TURNS` a call: fewer calls than turns, no trigger."""
    fake_server.script(skip_all(8))
    report = bench_against(fake_server, monkeypatch)

    rules, llm = report["rules"], report["llm"]
    assert report["llm_extraction"] == "deferred"
    assert llm["recall_any"] == rules["recall_any"] and llm["facts_per_turn"] == rules["facts_per_turn"]
    figures = llm["llm"]
    assert figures["trigger"]["calls"] == 0, "the model's skip is the trigger"
    extract = figures["extract"]
    assert extract["fallback_share"] == 0.0
    # a window ends once it spans LLM_WINDOW_SECONDS of the turns' time (replayed TURN_SPACING apart)
    per_window = int(report["llm_window_seconds"] / TURN_SPACING.total_seconds()) + 1
    assert extract["turns_asked"] == TURNS
    assert extract["calls"] == -(-TURNS // min(per_window, 8)) < TURNS
    assert figures["tokens_per_turn"] == round(  # dedup's same-fact checks are calls too
        len(fake_server.requests) * (USAGE["prompt_tokens"] + USAGE["completion_tokens"]) / TURNS, 1)


def test_the_llm_side_beside_the_rules(fake_server: FakeChatAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that says no to everything, asked inline (LLM_EXTRACTION=inline): in hybrid mode
    recall stays the rules', every call is counted as answered, and the server's tokens come out
    per turn."""
    fake_server.script(Reply.json({"should_create": False, "confidence": 0.2, "decision": "skip", "facts": [],
                                   "same_fact": False}))
    report = bench_against(fake_server, monkeypatch, LLM_EXTRACTION="inline")

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
    fake_server.script(skip_all(6))
    report = bench_against(fake_server, monkeypatch, ingest_batch=6, LLM_EXTRACTION="inline")

    rules, llm = report["rules"], report["llm"]
    assert report["ingest_batch"] == 6
    assert llm["recall_any"] == rules["recall_any"] and llm["facts_per_turn"] == rules["facts_per_turn"]
    extract = llm["llm"]["extract"]
    assert extract["fallback_share"] == 0.0
    assert 0 < extract["calls"] <= TURNS // 6 < extract["turns_asked"]
