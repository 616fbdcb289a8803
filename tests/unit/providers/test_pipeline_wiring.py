"""The ingest stage uses the configured LLM (through the real SDK client and a fake API)."""
from __future__ import annotations

from streams.worker import build_worker
from streams.guarded.llm import GuardedLLM
from streams.providers.llm import AnthropicProvider
from tests.unit.agents.conftest import Captured, local_topics  # noqa: F401 - fixture
from tests.unit.providers.conftest import AMPLE_BUDGETS, Reply, settings, turn
from tests.unit.providers.test_anthropic import EXTRACT_OK, TEXT, TRIGGER_OK


async def test_ingest_writes_the_llms_facts_when_one_is_configured(fake_api, local_topics, tmp_path,  # noqa: F811
                                                                  minilm_embedder):
    s = settings(anthropic_api_key="test-key", anthropic_base_url=fake_api.base_url,
                 table_store="memory://", data_dir=tmp_path, llm_mode="replace",  # the model's alone
                 **AMPLE_BUDGETS)  # the answers decide
    provider = AnthropicProvider.build(api_key="test-key", model=s.llm.anthropic_model,
                                       base_url=fake_api.base_url, max_retries=0)
    worker = build_worker(s, send=local_topics.send, embedder=minilm_embedder,
                          llm=GuardedLLM(provider, s))
    fake_api.script(Reply.json(TRIGGER_OK), Reply.json(EXTRACT_OK))
    async with worker.faust.agents["ingest"].test_context() as agent:
        await agent.put(turn(TEXT).model_dump_json().encode(), key=b"u1")
    summaries = [c.fact.summary for c in Captured(local_topics, worker.sealed.sealer).candidates]
    # The model's facts (its "yesterday" resolved against the turn's time), not the rules'.
    assert summaries == ["Caroline adopted a dog named Luna on 7 May 2023.",
                         "Caroline's dog Luna is 3 years old and loves the beach."]
    assert len(fake_api.requests) == 2, "trigger and extraction went to the model"
