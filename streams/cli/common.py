"""What the `memstream` commands share: the console, the common options, the broker and API
addresses from the settings, logging and the progress bar."""
from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from streams.settings import get_settings

console = Console(stderr=True)

BrokerOpt = Annotated[
    Optional[str], typer.Option("--broker", help="Kafka bootstrap servers (default: KAFKA_BROKER_URL or the embedded broker's address).")
]
ApiOpt = Annotated[
    Optional[str], typer.Option("--api", help="Base URL of a worker's web API (default: http://WEB_HOST:WEB_PORT).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def broker_url(broker: str | None) -> str:
    """`--broker`, else KAFKA_BROKER_URL (or the embedded broker's address)."""
    return broker or get_settings().kafka.broker_url


def api_url(api: str | None) -> str:
    """`--api`, else http://WEB_HOST:WEB_PORT."""
    settings = get_settings()
    return api or f"http://{settings.api.web_host}:{settings.api.web_port}"


def setup_logging() -> None:
    """Logging as LOG_LEVEL says (the service's commands call it first)."""
    from streams.observability.logs import configure

    configure(get_settings().observability.log_level)


def progress() -> Progress:
    """The progress bar `replay` shows, on the console (stderr)."""
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=console,
    )
