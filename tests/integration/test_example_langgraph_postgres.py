"""examples/langgraph_postgres.py runs: a LangGraph agent whose checkpointer is PostgresSaver and
whose store is PostgresStore over memstream's pgvector tables, on the session's one embedded
PostgreSQL. memstream's sink writes the memories; the agent recalls them, and its thread survives
a new agent (a restart) because the checkpoints are in PostgreSQL."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sinks.pgvector import PgVectorDestination
from sinks.routing import memory_records
from streams.app.services import Services
from streams.settings import Settings
from tests.integration.test_pgvector_sink import written_memory
from tests.integration.vector_servers import new_schema

pytestmark = pytest.mark.integration
EXAMPLE = Path(__file__).parents[2] / "examples" / "langgraph_postgres.py"


def example() -> Any:
    spec = importlib.util.spec_from_file_location("langgraph_postgres_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the graph's dataclasses resolve their module
    spec.loader.exec_module(module)
    return module


async def test_the_agent_recalls_what_memstream_wrote_and_keeps_its_thread_in_postgres(
        postgres_url: str, minilm_embedder: Any) -> None:
    schema = new_schema()
    settings = Settings(embedder="local", memory_store="pgvector", pgvector_url=postgres_url,
                        pgvector_schema=schema)
    services = Services(settings, embedder=minilm_embedder)
    facts = ["Ana has a dog named Luna.", "Ana works as a nurse in Lisbon."]
    written = [await written_memory(services, text, i) for i, text in enumerate(facts)]
    sink = PgVectorDestination.from_settings(settings)
    await sink.start()
    assert await sink.write([r for e, d in written for r in memory_records(e, {}, {e.memory_id: d})]) == []
    await sink.close()

    agent_module = example()
    embed = lambda texts: minilm_embedder.embed(list(texts)).tolist()  # noqa: E731 - the store's embed
    thread = f"thread-{schema}"
    with agent_module.agent_on(postgres_url, embed, schema=schema) as agent:
        answer = agent_module.ask(agent, "ana", thread, "What is my dog's name?")
        assert answer.startswith("From what I remember: Ana has a dog named Luna.")
        assert agent_module.ask(agent, "bo", f"{thread}-bo", "What is my dog's name?") == \
            "I don't remember anything about that yet.", "another user's memories are not searched"

    with psycopg.connect(postgres_url) as conn:
        (saved,) = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread,)).fetchone()
    assert saved > 0, "the thread's checkpoints are in PostgreSQL"

    with agent_module.agent_on(postgres_url, embed, schema=schema) as restarted:  # a new process's agent
        agent_module.ask(restarted, "ana", thread, "Where do I work?")
        state = restarted.get_state({"configurable": {"thread_id": thread}})
        contents = [m.content for m in state.values["messages"]]
    assert contents[0] == "What is my dog's name?" and contents[2] == "Where do I work?"
    assert "nurse in Lisbon" in contents[3]
