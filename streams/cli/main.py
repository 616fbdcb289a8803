"""The `memstream` command line: the main app and its sub-apps by concern.

- `streams.cli.service`: run, worker, broker
- `streams.cli.client`: send, replay, watch, query
- `streams.cli.memories`: memories list|get|edit|delete|history|export (a user's memories)
- `streams.cli.settings`: settings
- `streams.cli.bench`: bench … (the benches, from a source checkout; imported when one runs)
- `streams.cli.keys`: keys … (API keys, the master key)
- `streams.cli.dlq`: dlq list, dlq replay (the dead letters)
- `streams.cli.mcp`: mcp (memstream as an MCP server, stdio or streamable HTTP)
"""
from __future__ import annotations

import sys

import typer

from streams.cli.bench import bench_app
from streams.cli.client import client_app
from streams.cli.dlq import dlq_app
from streams.cli.keys import keys_app
from streams.cli.mcp import mcp_app
from streams.cli.memories import memories_app
from streams.cli.service import service_app
from streams.cli.settings import settings_app

app = typer.Typer(
    help="memstream: streaming long-term memory for chat agents, on Kafka with Faust.\n\n"
    "Settings come from the environment (see docs/configuration.md). With no KAFKA_BROKER_URL, "
    "`run` starts an embedded Kafka-compatible broker.",
    no_args_is_help=True, add_completion=False,
)
app.add_typer(service_app)
app.add_typer(client_app)
app.add_typer(settings_app)
app.add_typer(memories_app, name="memories")
app.add_typer(bench_app, name="bench")
app.add_typer(keys_app, name="keys")
app.add_typer(dlq_app, name="dlq")
app.add_typer(mcp_app)


def main() -> None:
    from streams.app.backends import pin_cpu_backends

    pin_cpu_backends()
    app()


if __name__ == "__main__":
    sys.exit(main())
