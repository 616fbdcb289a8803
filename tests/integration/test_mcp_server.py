"""`memstream mcp` against a running worker, through the MCP client of the same `mcp` package:
over stdio (the command spawned as a subprocess, as Claude Desktop and Cursor do) and over
streamable HTTP (the server's app on a real socket). The tools add, search, list, get, update
and delete a user's memories, and answer within the API key's scope."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from streams.client import AsyncMemstreamClient
from streams.tools.mcp_server import ServerOptions, build_server
from tests.integration.conftest import ADMIN_KEY, PLANNER_KEY, REQUEST_GUARD_S, own_stack, unique_user

pytestmark = pytest.mark.integration

# Turns dated now: a stack of the module's own (`a_broker`).
broker, worker = own_stack()

TOOLS = {"search_memories", "add_memory", "list_memories", "get_memory", "update_memory", "delete_memory"}


def structured(result: Any) -> Any:
    """A tool's answer as JSON (its structured content, else its text), or the error it gave."""
    if result.is_error:
        raise ToolFailed(" ".join(getattr(c, "text", "") for c in result.content))
    if result.structured_content is not None:
        content = result.structured_content
        return content.get("result", content) if set(content) == {"result"} else content
    return json.loads(result.content[0].text)


class ToolFailed(Exception):
    pass


@asynccontextmanager
async def over_stdio(worker, broker, *args: str, key: str = ADMIN_KEY) -> AsyncIterator[ClientSession]:
    env = {**os.environ, "MEMSTREAM_API_KEY": key, "KAFKA_BROKER_URL": broker.url}
    params = StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "streams", "mcp", "--api", worker.api_url, *args])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_the_tools_over_stdio_add_search_list_get_update_delete(worker, broker):
    user = unique_user("mcp")
    async with over_stdio(worker, broker, "--user", user) as session:
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        added = structured(await session.call_tool("add_memory", {"text": "I prefer window seats on flights."}))
        assert len(added) == 1 and "window seat" in added[0]["summary"]  # applied when it answers
        memory_id = added[0]["id"]

        found = structured(await session.call_tool("search_memories", {"query": "Which seat does the user like?"}))
        assert found[0]["id"] == memory_id and 0 < found[0]["score"] <= 1
        page = structured(await session.call_tool("list_memories", {}))
        assert page["total"] == 1 and [m["id"] for m in page["memories"]] == [memory_id]
        one = structured(await session.call_tool("get_memory", {"memory_id": memory_id}))
        assert one["id"] == memory_id and one["source_turn_ids"][0].startswith("mcp:")

        text = "The user prefers aisle seats on long flights."
        edited = structured(await session.call_tool("update_memory", {"memory_id": memory_id, "text": text}))
        assert edited["summary"] == text
        gone = structured(await session.call_tool("delete_memory", {"memory_id": memory_id}))
        assert gone["status"] == "applied"
        assert structured(await session.call_tool("list_memories", {}))["total"] == 0
        with pytest.raises(ToolFailed, match="no memory"):
            structured(await session.call_tool("get_memory", {"memory_id": "no-such-memory"}))


async def test_the_tools_answer_within_the_keys_scope(worker, broker):
    user = unique_user("mcp")
    async with AsyncMemstreamClient(broker.url, worker.api_url, ADMIN_KEY, apply_timeout=REQUEST_GUARD_S) as admin:
        pet = (await admin.add([{"role": "user", "content": "Remember that I adopted a dog named Luna."}],
                               user_id=user, thread_id="t1")).memories[0]
    async with over_stdio(worker, broker, "--agent", "planner", key=PLANNER_KEY) as session:
        with pytest.raises(ToolFailed, match="user_id"):  # no --user: each call names one
            structured(await session.call_tool("list_memories", {}))
        assert structured(await session.call_tool("list_memories", {"user_id": user}))["total"] == 0
        with pytest.raises(ToolFailed, match="no memory"):  # Personal: outside the planner's scope
            structured(await session.call_tool("get_memory", {"user_id": user, "memory_id": pet.id}))
        found = structured(await session.call_tool("search_memories", {"user_id": user, "query": "dog"}))
        assert pet.id not in {m["id"] for m in found}
        with pytest.raises(ToolFailed, match="delete failed"):
            structured(await session.call_tool("delete_memory", {"user_id": user, "memory_id": pet.id}))


async def test_the_tools_over_streamable_http(worker, broker):
    user = unique_user("mcp")

    def client() -> AsyncMemstreamClient:
        return AsyncMemstreamClient(broker.url, worker.api_url, ADMIN_KEY, apply_timeout=REQUEST_GUARD_S)

    app = build_server(ServerOptions(client, user=user)).streamable_http_app()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # connections wait in the backlog until the server accepts them
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            added = structured(await session.call_tool("add_memory", {"text": "My sister Maya lives in Lisbon."}))
            assert added and "Lisbon" in added[0]["summary"]
            found = structured(await session.call_tool("search_memories", {"query": "Where does Maya live?"}))
            assert found[0]["id"] == added[0]["id"]
    finally:
        server.should_exit = True
        await serving
        listener.close()
