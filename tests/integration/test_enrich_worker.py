"""End to end, deferred extraction (`LLM_EXTRACTION=deferred`, the default with an LLM): a worker
over the embedded broker with an OpenAI-compatible server (a local fake, real HTTP through the
real `openai` client) stores the rules' facts of a turn without asking the model, and its enrich
agent — a second agent on `chat.turns` — asks the model about the window's turns together and
stores what it adds as more memories of the same turns."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streams.app.topic_admin import create_topics
from streams.app.topology import ALL_TOPICS
from streams.memory import ids
from streams.tools.broker import EmbeddedBroker
from tests.integration.conftest import (
    PARTITIONS,
    Worker,
    memories,
    make_turn,
    produce,
    read_all,
    unique_user,
    wait_processed,
)
from tests.unit.providers.conftest import Reply
from tests.unit.providers.openai_fake import FakeChatAPI, fake_chat_in_thread
from topics.candidates import MODEL_FACT_INDEX
from topics.names import MEMORY_EVENTS

pytestmark = pytest.mark.integration
ADDED = "Ana's parrot Quorblat is green and loves grapes."


@pytest.fixture(scope="module")
def model() -> Iterator[FakeChatAPI]:
    with fake_chat_in_thread() as fake:
        fake.script(Reply.json({"turns": [
            {"n": 1, "decision": "semantic", "facts": [{"summary": ADDED, "category": "Personal",
                                                        "importance": 3}]},
            *({"n": n, "decision": "skip", "facts": []} for n in range(2, 9))]}))
        yield fake


def model_env(model: FakeChatAPI, *, window_seconds: int) -> dict[str, str]:
    """A worker's settings for the fake model, its windows `window_seconds` long (budgets no
    busy machine runs out)."""
    return {"LLM_PROVIDER": "openai", "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test-key",
            "OPENAI_RESPONSE_FORMAT": "json_object", "LLM_WINDOW_SECONDS": str(window_seconds),
            "LLM_EXTRACT_BUDGET_MS": "600000", "LLM_SAME_FACT_BUDGET_MS": "600000"}


@pytest.fixture(scope="module")
def enrich_worker(model: FakeChatAPI, tmp_path_factory) -> Iterable[Worker]:
    workdir: Path = tmp_path_factory.mktemp("enrich")
    broker = EmbeddedBroker(log_path=workdir / "broker.log").start()
    asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
    worker = Worker(broker.url, workdir / "data", "memstream-enrich", workdir / "worker.log",
                    env=model_env(model, window_seconds=1))
    worker.start()
    try:
        yield worker
    finally:
        worker.kill()  # a throwaway worker: a clean stop only spends ~15 s closing RocksDB
        broker.stop()


def extraction_requests(model: FakeChatAPI, user_text: str) -> list[dict[str, Any]]:
    """The model's extraction calls that asked about a turn saying `user_text`."""
    return [r for r in model.requests
            if any(m["role"] == "user" and user_text in m["content"] for m in r["body"]["messages"])
            and "turns" in json.loads(next(m["content"] for m in r["body"]["messages"] if m["role"] == "user"))]


def test_the_rules_store_a_turn_and_the_enrich_agent_adds_what_the_model_says(
        enrich_worker: Worker, model: FakeChatAPI) -> None:
    user = unique_user("enrich")
    turns = [make_turn(user, "1", "My parrot Quorblat can say twenty words."),
             make_turn(user, "2", "I work as a nurse at the children's hospital in Lisbon.")]
    asyncio.run(produce(enrich_worker.broker_url, turns))
    asyncio.run(wait_processed(enrich_worker.broker_url, turns))  # the rules' facts, applied

    added_id = ids.memory_id(user, "t1", "1", MODEL_FACT_INDEX)
    [created] = asyncio.run(read_all(enrich_worker.broker_url, MEMORY_EVENTS,
                                     lambda e: e.get("memory_id") == added_id and e.get("kind") == "created", 1))
    assert created["summary"] == ADDED

    stored = {m["summary"]: m for m in asyncio.run(memories(enrich_worker.api_url, user))}
    assert ADDED in stored and any("Quorblat" in s and s != ADDED for s in stored), \
        "the model's fact beside the rules'"
    assert any("nurse" in s for s in stored)
    asked = extraction_requests(model, "Quorblat can say twenty words")
    assert asked, "the enrich agent asked the model"


def test_a_window_cut_short_by_a_kill_is_asked_about_after_the_restart(
        model: FakeChatAPI, tmp_path_factory) -> None:
    """The window's turns are unacked until asked about: a worker killed mid-window leaves them
    uncommitted, and the next one asks about them (the rules' facts are not made twice)."""
    workdir: Path = tmp_path_factory.mktemp("enrich-kill")
    broker = EmbeddedBroker(log_path=workdir / "broker.log").start()
    try:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        first = Worker(broker.url, workdir / "data", "memstream-enrich-kill", workdir / "worker.log",
                       env=model_env(model, window_seconds=3600)).start()
        user = unique_user("killed")
        turns = [make_turn(user, "1", "My parrot Quorblat whistles the national anthem.")]
        asyncio.run(produce(broker.url, turns))
        asyncio.run(wait_processed(broker.url, turns))
        by_rules = {m["id"] for m in asyncio.run(memories(first.api_url, user))}
        assert by_rules and not extraction_requests(model, "whistles the national anthem"), \
            "still in its window"
        first.kill()

        second = Worker(broker.url, workdir / "data", "memstream-enrich-kill", workdir / "worker2.log",
                        env=model_env(model, window_seconds=1)).start()
        try:
            added_id = ids.memory_id(user, "t1", "1", MODEL_FACT_INDEX)
            asyncio.run(read_all(broker.url, MEMORY_EVENTS,
                                 lambda e: e.get("memory_id") == added_id and e.get("kind") == "created", 1))
            after = {m["id"] for m in asyncio.run(memories(second.api_url, user))}
            assert after == by_rules | {added_id}, "the rules' memories once, the model's added"
        finally:
            second.kill()
    finally:
        broker.stop()
