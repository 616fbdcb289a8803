"""What the `memstream` commands share: the console, the common options, the settings (an
invalid one is a one-line error), the broker and API addresses from them, a failure told in one
line, logging and the progress bar."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

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

if TYPE_CHECKING:
    from streams.settings import Settings

console = Console(stderr=True)

BrokerOpt = Annotated[
    Optional[str], typer.Option("--broker", help="Kafka bootstrap servers (default: KAFKA_BROKER_URL or the embedded broker's address).")
]
ApiOpt = Annotated[
    Optional[str], typer.Option("--api", help="Base URL of a worker's web API (default: http://WEB_HOST:WEB_PORT).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def settings() -> Settings:
    """The process's settings; one that is not valid (KAFKA_BROKER_URL=host:abc) ends the
    command with one line naming it and what is wrong (exit 2), not a traceback."""
    from pydantic import ValidationError

    try:
        return get_settings()
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_input=False, include_url=False):
            name = "_".join(str(part) for part in error["loc"]).upper()
            message = error["msg"].removeprefix("Value error, ")
            problems.append(message if message.startswith(name) else f"{name}: {message}")
        fail("invalid settings", "; ".join(problems), code=2)


def fail(what: str, error: BaseException | str, code: int = 1) -> NoReturn:
    """End the command with one line on stderr, `what: error` (never wrapped, no markup nor
    emoji codes: `host:abc:`), and exit `code`."""
    from rich.markup import escape

    reason = str(error) or type(error).__name__
    console.print(f"[red]{escape(what)}:[/] {escape(' '.join(reason.split()))}", soft_wrap=True,
                  emoji=False, highlight=False)
    raise typer.Exit(code)


def broker_url(broker: str | None) -> str:
    """`--broker`, else KAFKA_BROKER_URL (or the embedded broker's address)."""
    return broker or settings().kafka.broker_url


def api_url(api: str | None) -> str:
    """`--api`, else http://WEB_HOST:WEB_PORT."""
    current = settings()
    return api or f"http://{current.api.web_host}:{current.api.web_port}"


def setup_logging() -> None:
    """Logging as LOG_LEVEL says (the service's commands call it first, so a setting that is
    not valid ends them with `settings()`'s one line, not a traceback)."""
    from streams.observability.logs import configure

    configure(settings().observability.log_level)


def progress() -> Progress:
    """The progress bar `replay` shows, on the console (stderr)."""
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=console,
    )
