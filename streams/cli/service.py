"""The service's commands: `run` (broker, topics, worker and web API in one), `worker`, `broker`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from streams.cli.common import console, settings, setup_logging
from streams.cli.keys import dev_admin_entries, with_kept_master_key

service_app = typer.Typer()


@service_app.command()
def run(
    fresh: Annotated[bool, typer.Option(
        "--fresh", help="Start from nothing: delete the embedded broker's topics and the worker's "
        "tables under DATA_DIR first (asks; the master key and the admin API key are kept).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --fresh: do not ask.")] = False,
) -> None:
    """Run the service: the embedded broker (unless KAFKA_BROKER_URL is set), topics, worker, web API.

    The embedded broker keeps its topics, records and committed offsets under DATA_DIR/broker,
    and the worker its tables under DATA_DIR: stopping (Ctrl-C, a kill, a reboot) loses nothing
    and the next run goes on where this one stopped. Ctrl-C stops everything it started.
    """
    setup_logging()
    current = settings()
    data_dir = current.kafka.data_dir
    if fresh:
        _start_fresh(data_dir, yes)
    broker = None
    if current.kafka.broker_is_embedded:
        from streams.errors import BrokerError
        from streams.tools.broker import DiskStorage, EmbeddedBroker

        data_dir.mkdir(parents=True, exist_ok=True)
        if not (data_dir / BROKER_DIR).exists():
            # Tables from a broker that kept nothing (before topics were kept on disk) describe
            # changelogs the new broker does not have.
            _delete_tables(data_dir)
        storage = DiskStorage(data_dir / BROKER_DIR, data_dir / "object-store.log")
        try:
            broker = EmbeddedBroker(current.kafka.embedded_broker_port, data_dir / "broker.log",
                                    storage=storage).start()
        except BrokerError as exc:
            storage.stop()
            console.print(f"[red]embedded broker not started:[/] {exc}")
            raise typer.Exit(1)
        console.print(f"[green]embedded broker[/] on {broker.url} (kept in {data_dir / BROKER_DIR})")
    try:
        from streams.worker import run_worker

        extra_keys = dev_admin_entries(current)
        current = with_kept_master_key(current, make=True)
        console.print(f"[green]worker[/] web API on http://{current.api.web_host}:{current.api.web_port}")
        run_worker(current, extra_keys, quiet_services=True)  # a console a person reads
    finally:
        if broker is not None:
            broker.stop()


BROKER_DIR = "broker"


def _tables(data_dir: Path) -> list[Path]:
    """Where Faust keeps the worker's tables: DATA_DIR/v<app version>/tables."""
    return list(data_dir.glob("v*/tables"))


def _delete_tables(data_dir: Path) -> None:
    import shutil

    for path in _tables(data_dir):
        shutil.rmtree(path)
        console.print(f"[yellow]deleted[/] {path}: tables of a broker that kept no topics")


def _start_fresh(data_dir: Path, yes: bool) -> None:
    """Delete what a run keeps (the broker's topics, the worker's tables), asking first."""
    import shutil

    doomed = [path for path in [data_dir / BROKER_DIR, *_tables(data_dir)] if path.exists()]
    if not doomed:
        return
    if not yes and not typer.confirm(f"Delete every memory, topic and table under {data_dir}?"):
        raise typer.Exit(1)
    for path in doomed:
        shutil.rmtree(path)
    console.print(f"[yellow]fresh start[/]: deleted {', '.join(str(p) for p in doomed)}")


@service_app.command()
def worker() -> None:
    """Run one Faust worker against KAFKA_BROKER_URL (for scaling out: start several)."""
    setup_logging()
    from streams.worker import run_worker
    from streams.errors import BrokerError

    try:
        run_worker(settings())
    except BrokerError as exc:  # unreachable, or refused the TLS or SASL settings (or they are wrong)
        console.print(f"[red]worker not started:[/] {exc}")
        raise typer.Exit(1)


@service_app.command()
def broker(port: Annotated[int, typer.Option(help="Port to listen on.")] = 9092) -> None:
    """Run only the embedded broker, kept in DATA_DIR/broker, until Ctrl-C; workers connect with
    KAFKA_BROKER_URL."""
    import signal

    from streams.tools.broker import DiskStorage, EmbeddedBroker
    from streams.app.topic_admin import ensure_topics
    from streams.app.topology import ALL_TOPICS

    current = settings()
    data_dir = current.kafka.data_dir
    with EmbeddedBroker(port, storage=DiskStorage(data_dir / BROKER_DIR, data_dir / "object-store.log")) as b:
        ensure_topics(b.url, ALL_TOPICS, current.kafka.topic_partitions)
        console.print(f"embedded broker on {b.url}; topics created. Ctrl-C to stop.")
        try:
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
        except KeyboardInterrupt:
            pass
