"""memstream as an MCP server (`memstream mcp`, docs/mcp.md): tools to search, add, list, get,
update and delete a user's memories, for Claude Desktop, Cursor and other MCP clients.

Every tool calls memstream's client (`streams.client`) with one API key, so the server answers
within that key's scope: a user's data the key may not read, a category outside its allowlist,
is refused by the worker as it would be over HTTP (the tool answers an error naming it). Memories
are added as the user's own chat turn "Remember that …" on `chat.turns` and the tool returns
once the worker has applied it, with the memories it made.

Built on the official `mcp` package's `MCPServer`; `run` serves it over stdio (what a desktop
client spawns) or streamable HTTP.
"""
from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from streams.client.aio import AsyncMemstreamClient
from streams.client.errors import ClientError
from streams.errors import MemstreamError
from topics.turns import Role, Turn

Transport = Literal["stdio", "streamable-http"]
MCP_THREAD = "mcp"
"""The chat thread of the memories the server adds, unless a call names one."""
SEARCH_LIMIT = 5
LIST_LIMIT = 20
SAID_REMEMBER = re.compile(r"^\s*(please\s+)?remember\b", re.IGNORECASE)
READ = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
REMOVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True,
                         openWorldHint=False)


class UserNotNamed(ToolError, MemstreamError):
    """A tool was called without `user_id`, and the server has no default user (`--user`); a
    `ToolError`, so the MCP client is told so as the tool's answer."""


@dataclass(frozen=True)
class ServerOptions:
    """What the server calls memstream with: `client` makes the client (one per server run),
    `user` the default user of the tools, `agent` whose allowlist searches apply."""

    client: Callable[[], AsyncMemstreamClient]
    user: str | None = None
    agent: str = "supervisor"
    thread: str = MCP_THREAD


def memory_of(view: Any) -> dict[str, Any]:
    """What a tool shows of a memory: the fields a model reads, not the whole document."""
    doc = view.model_dump(mode="json") if hasattr(view, "model_dump") else dict(view)
    shown = {k: doc.get(k) for k in ("id", "summary", "type", "category", "state", "pinned",
                                    "importance", "updated_at")}
    if doc.get("score") is not None:
        shown["score"] = doc["score"]
    return shown


def build_server(options: ServerOptions) -> MCPServer[Any]:
    """The MCP server with memstream's tools (module doc)."""
    holder: dict[str, AsyncMemstreamClient] = {}

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        async with options.client() as client:
            holder["client"] = client
            yield
            holder.pop("client", None)

    server: MCPServer[Any] = MCPServer(
        "memstream", instructions=(
            "Long-term memory of the user across conversations. Search it before answering what "
            "the user said before; add what the user asks you to remember; list, update or "
            "delete memories when the user asks what you know about them or to change it."),
        lifespan=lifespan, log_level="WARNING")

    def client() -> AsyncMemstreamClient:
        return holder["client"]

    def user_of(user_id: str | None) -> str:
        user = user_id or options.user
        if not user:
            raise UserNotNamed("name the user (user_id): this server has no default user (--user)")
        return user

    async def calling(what: str, call: Any) -> Any:
        try:
            return await call
        except ClientError as exc:
            raise ToolError(f"{what} failed: {exc}") from exc

    @server.tool(annotations=READ)
    async def search_memories(query: str, user_id: str | None = None, limit: int = SEARCH_LIMIT,
                              threshold: float | None = None) -> list[dict[str, Any]]:
        """The user's memories that answer `query`, best first, each with its `score` (0-1)."""
        found = await calling("search", client().search(
            user_of(user_id), query, agent=options.agent, top_k=limit, threshold=threshold))
        return [memory_of(item) for item in found]

    @server.tool(annotations=WRITE)
    async def add_memory(text: str, user_id: str | None = None,
                         thread_id: str | None = None) -> list[dict[str, Any]]:
        """Remember `text` about the user (said as the user: "I prefer window seats."); returns
        the memories memstream made or changed from it, once stored (none: nothing worth
        keeping, or refused by the write policy)."""
        said = text if SAID_REMEMBER.match(text) else f"Remember that {text}"
        user = user_of(user_id)
        turn = Turn(user_id=user, thread_id=thread_id or options.thread,
                    turn_id=f"mcp-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%f')}",
                    role=Role.user, text=said, ts=datetime.now(timezone.utc),
                    agent_id=options.agent)
        result = await calling("add", client().send_turn(turn, wait=True))
        return [memory_of(m) for m in result.memories]

    @server.tool(annotations=READ)
    async def list_memories(user_id: str | None = None, category: str | None = None,
                            limit: int = LIST_LIMIT, offset: int = 0) -> dict[str, Any]:
        """One page of the user's active memories, newest first (`next_offset` pages on)."""
        page = await calling("list", client().memories(
            user_of(user_id), category=category, state="active", limit=limit, offset=offset))
        return {"total": page.total, "next_offset": page.next_offset,
                "memories": [memory_of(m) for m in page.items]}

    @server.tool(annotations=READ)
    async def get_memory(memory_id: str, user_id: str | None = None) -> dict[str, Any]:
        """One memory of the user, with its provenance (the turns it came from)."""
        view = await calling("get", client().get(user_of(user_id), memory_id))
        if view is None:
            raise ToolError(f"no memory {memory_id!r} this key may see")
        return {**memory_of(view), "source_turn_ids": view.source_turn_ids,
                "created_at": view.created_at.isoformat()}

    @server.tool(annotations=WRITE)
    async def update_memory(memory_id: str, text: str, user_id: str | None = None) -> dict[str, Any]:
        """Replace the memory's text (1-2 self-contained sentences about the user)."""
        user = user_of(user_id)
        await calling("update", client().update(user, memory_id, text))
        return await get_memory(memory_id, user)

    @server.tool(annotations=REMOVE)
    async def delete_memory(memory_id: str, user_id: str | None = None) -> dict[str, Any]:
        """Delete the memory (restorable by an admin until it is purged)."""
        result = await calling("delete", client().delete(user_of(user_id), memory_id))
        return {"memory_id": memory_id, "status": result.status}

    return server


def run(options: ServerOptions, transport: Transport = "stdio", host: str = "127.0.0.1",
        port: int = 8765, path: str = "/mcp") -> None:
    """Serve until stopped (stdio: until the client closes stdin)."""
    server = build_server(options)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port, streamable_http_path=path)
