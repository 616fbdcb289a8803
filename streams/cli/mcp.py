"""`memstream mcp`: memstream as an MCP server (`streams.tools.mcp_server`, docs/mcp.md), over
stdio (what Claude Desktop and Cursor spawn) or streamable HTTP.

The key is MEMSTREAM_API_KEY (or `--api-key`), else the admin key `memstream run` keeps in
DATA_DIR, as every client command finds it (`streams.api.auth.client_key`). Nothing is printed on
stdout but the protocol (stdio); logs go to stderr.
"""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from streams.cli.common import ApiOpt, BrokerOpt, api_url, broker_url, settings

mcp_app = typer.Typer()


class McpTransport(str, Enum):
    stdio = "stdio"
    http = "http"


@mcp_app.command("mcp")
def mcp(
    transport: Annotated[McpTransport, typer.Option(help="stdio (spawned by the client) or http (streamable HTTP).")] = McpTransport.stdio,
    user: Annotated[Optional[str], typer.Option("--user", envvar="MEMSTREAM_MCP_USER", help="The user the tools act for when a call names none.")] = None,
    agent: Annotated[str, typer.Option(help="The agent whose category allowlist searches apply.")] = "supervisor",
    api_key: Annotated[Optional[str], typer.Option("--api-key", help="The API key the tools call with (default: MEMSTREAM_API_KEY, else `memstream run`'s admin key).")] = None,
    host: Annotated[str, typer.Option(help="http: the address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="http: the port to listen on.")] = 8765,
    path: Annotated[str, typer.Option(help="http: the endpoint's path.")] = "/mcp",
    api: ApiOpt = None,
    broker: BrokerOpt = None,
) -> None:
    """Serve memstream's memories to MCP clients: search, add, list, get, update, delete."""
    from streams.client import AsyncMemstreamClient
    from streams.observability.logs import configure
    from streams.tools.mcp_server import ServerOptions, run

    current = settings()
    configure(current.observability.log_level)  # on stderr: stdout is the protocol's
    api_base, kafka = api_url(api), broker_url(broker)

    def client() -> AsyncMemstreamClient:
        options = {"api_url": api_base, "broker": kafka}
        if api_key:
            options["api_key"] = api_key
        return AsyncMemstreamClient.from_settings(current, **options)

    run(ServerOptions(client, user=user, agent=agent),
        "stdio" if transport is McpTransport.stdio else "streamable-http", host, port, path)
