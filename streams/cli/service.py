"""The service's commands: `run` (broker, topics, worker and web API in one), `worker`, `broker`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from streams.settings import get_settings
from streams.cli.common import console, setup_logging
from streams.cli.keys import dev_admin_entries, with_kept_master_key

service_app = typer.Typer()


@service_app.command()
def run() -> None:
    """Run the service: the embedded broker (unless KAFKA_BROKER_URL is set), topics, worker, web API.

    Ctrl-C stops everything it started.
    """
    setup_logging()
    settings = get_settings()
    broker = None
    if settings.kafka.broker_is_embedded:
        from streams.tools.broker import EmbeddedBroker

        settings.kafka.data_dir.mkdir(parents=True, exist_ok=True)
        broker = EmbeddedBroker(settings.kafka.embedded_broker_port, settings.kafka.data_dir / "broker.log").start()
        # The embedded broker keeps nothing on disk, so local table state from an earlier run
        # would describe topics that no longer exist.
        _reset_tables(settings.kafka.data_dir)
        console.print(f"[green]embedded broker[/] on {broker.url} (memory storage)")
    try:
        from streams.worker import run_worker

        extra_keys = dev_admin_entries(settings)
        settings = with_kept_master_key(settings, make=True)
        console.print(f"[green]worker[/] web API on http://{settings.api.web_host}:{settings.api.web_port}")
        run_worker(settings, extra_keys)
    finally:
        if broker is not None:
            broker.stop()


def _reset_tables(data_dir: Path) -> None:
    import shutil

    # Faust keeps tables under DATA_DIR/v<app version>/tables.
    for child in data_dir.glob("v*/tables"):
        shutil.rmtree(child, ignore_errors=True)


@service_app.command()
def worker() -> None:
    """Run one Faust worker against KAFKA_BROKER_URL (for scaling out: start several)."""
    setup_logging()
    from streams.worker import run_worker
    from streams.errors import BrokerError

    try:
        run_worker(get_settings())
    except BrokerError as exc:  # unreachable, or refused the TLS or SASL settings (or they are wrong)
        console.print(f"[red]worker not started:[/] {exc}")
        raise typer.Exit(1)


@service_app.command()
def broker(port: Annotated[int, typer.Option(help="Port to listen on.")] = 9092) -> None:
    """Run only the embedded broker (memory storage) until Ctrl-C; workers connect with KAFKA_BROKER_URL."""
    import signal

    from streams.tools.broker import EmbeddedBroker
    from streams.app.topic_admin import ensure_topics
    from streams.app.topology import ALL_TOPICS

    with EmbeddedBroker(port) as b:
        ensure_topics(b.url, ALL_TOPICS, get_settings().kafka.topic_partitions)
        console.print(f"embedded broker on {b.url}; topics created. Ctrl-C to stop.")
        try:
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
        except KeyboardInterrupt:
            pass
