"""The `memstream` command line: run the service, send and replay turns, watch, query, bench."""
from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from streams.settings import Settings, get_settings

if TYPE_CHECKING:
    from streams.api.auth import KeyEntry

app = typer.Typer(
    help="memstream: streaming long-term memory for chat agents, on Kafka with Faust.\n\n"
    "Settings come from the environment (see docs/configuration.md). With no KAFKA_BROKER_URL, "
    "`run` starts an embedded Kafka-compatible broker.",
    no_args_is_help=True, add_completion=False,
)
bench_app = typer.Typer(help="Benchmarks that replay data sets through the running pipeline.")
app.add_typer(bench_app, name="bench")
keys_app = typer.Typer(help="API keys (streams/api/auth.py).")
app.add_typer(keys_app, name="keys")
console = Console(stderr=True)

BrokerOpt = Annotated[
    Optional[str], typer.Option("--broker", help="Kafka bootstrap servers (default: KAFKA_BROKER_URL or the embedded broker's address).")
]
ApiOpt = Annotated[
    Optional[str], typer.Option("--api", help="Base URL of a worker's web API (default: http://WEB_HOST:WEB_PORT).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
Mem0PythonOpt = Annotated[Optional[str], typer.Option(
    "--mem0-python", envvar="MEM0_PYTHON",
    help="Python of the venv holding mem0 (the `baselines` extra; default .mem0-venv/bin/python when present, else this one).")]
Mem0ThreadsOpt = Annotated[int, typer.Option(
    "--mem0-torch-threads", help="torch intra-op threads in mem0's process (0: torch's default, as mem0 runs out of the box).")]


def _broker(broker: str | None) -> str:
    return broker or get_settings().kafka.broker_url


def _api(api: str | None) -> str:
    settings = get_settings()
    return api or f"http://{settings.api.web_host}:{settings.api.web_port}"


def _setup_logging() -> None:
    from streams.observability.logs import configure

    configure(get_settings().observability.log_level)


@app.command()
def run() -> None:
    """Run the service: the embedded broker (unless KAFKA_BROKER_URL is set), topics, worker, web API.

    Ctrl-C stops everything it started.
    """
    _setup_logging()
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

        extra_keys = _dev_admin_key(settings)
        settings = _with_kept_master_key(settings, make=True)
        console.print(f"[green]worker[/] web API on http://{settings.api.web_host}:{settings.api.web_port}")
        run_worker(settings, extra_keys)
    finally:
        if broker is not None:
            broker.stop()


def _dev_admin_key(settings: Settings) -> list[KeyEntry]:
    """With no key configured, `run` accepts one admin key and says where it is kept.

    The key is made once per data dir and kept in DATA_DIR/admin-api-key (mode 0600), where the
    local CLI finds it; it is never printed in full (a console may be logged or shared) nor
    logged. Production workers take keys from the settings.
    """
    from streams.api import auth

    if len(auth.KeyRing.from_settings(settings)):
        return []
    path = auth.dev_key_path(settings)
    key = auth.dev_admin_key(settings)
    console.print(f"[yellow]no API keys configured[/]: an admin key ({auth.masked(key)}) is in "
                  f"{path}; the admin page is http://{settings.api.web_host}:{settings.api.web_port}/admin")
    return [auth.entry_for(key, "admin", "admin")]


def _with_kept_master_key(settings: Settings, make: bool = False) -> Settings:
    """With no master key configured, the one `memstream run` keeps in DATA_DIR/master-key
    (mode 0600; made first when `make`). `memstream worker` never makes one: every worker of a
    deployment needs the same key."""
    if settings.privacy.memstream_master_key is not None or settings.privacy.master_key_file is not None:
        return settings
    path = Path(settings.kafka.data_dir) / "master-key"
    if make and not path.exists():
        _write_private(path, _new_master_key())
    return settings.with_values(master_key_file=path) if path.exists() else settings


def _master_key(settings: Settings) -> bytes | None:
    from streams.privacy.crypto import master_key_of

    return master_key_of(settings.privacy)


def _new_master_key() -> str:
    from streams.privacy.crypto import encode_key, new_key

    return encode_key(new_key())


def _write_private(path: Path, text: str) -> None:
    """Create a file only its owner may read (mode 0600); never through a symlink, never over
    an existing file (`streams.api.auth.write_private`)."""
    from streams.api.auth import write_private

    write_private(path, text)


def _reset_tables(data_dir: Path) -> None:
    import shutil

    # Faust keeps tables under DATA_DIR/v<app version>/tables.
    for child in data_dir.glob("v*/tables"):
        shutil.rmtree(child, ignore_errors=True)


@app.command()
def worker() -> None:
    """Run one Faust worker against KAFKA_BROKER_URL (for scaling out: start several)."""
    _setup_logging()
    from streams.worker import run_worker
    from streams.errors import BrokerError

    try:
        run_worker(get_settings())
    except BrokerError as exc:  # unreachable, or refused the TLS or SASL settings (or they are wrong)
        console.print(f"[red]worker not started:[/] {exc}")
        raise typer.Exit(1)


@app.command()
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


@app.command()
def send(
    text: Annotated[str, typer.Argument(help="What was said.")],
    user: Annotated[str, typer.Option(help="user_id (the record key).")],
    thread: Annotated[str, typer.Option(help="thread_id.")] = "main",
    turn_id: Annotated[Optional[str], typer.Option(help="turn_id (default: a timestamp).")] = None,
    role: Annotated[str, typer.Option(help="user | assistant | tool | system.")] = "user",
    speaker: Annotated[Optional[str], typer.Option(help="Display name of the speaker.")] = None,
    ts: Annotated[Optional[str], typer.Option(help="Event time, ISO 8601 with zone (default: now).")] = None,
    broker: BrokerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send one chat turn to `chat.turns` (through memstream's client, streams/client/)."""
    from pydantic import ValidationError

    from streams.app.kafka_security import client_kwargs
    from streams.client import AsyncMemstreamClient, ClientError
    from topics.turns import Turn

    now = datetime.now(timezone.utc)
    try:
        turn = Turn(
            user_id=user, thread_id=thread, turn_id=turn_id or now.strftime("%Y%m%dT%H%M%S%f"),
            role=role, speaker=speaker, text=text, ts=ts or now.isoformat(),  # type: ignore[arg-type]
        )
    except ValidationError as exc:
        console.print(f"[red]invalid turn:[/] {exc}")
        raise typer.Exit(2)

    async def go() -> dict:
        async with AsyncMemstreamClient(_broker(broker), kafka_security=client_kwargs(get_settings().kafka)) as client:
            sent = await client.send_turn(turn)
        return {"topic": sent.topic, "partition": sent.partition, "offset": sent.offset,
                "user_id": turn.user_id, "thread_id": turn.thread_id, "turn_id": turn.turn_id}

    try:
        result = asyncio.run(go())
    except ClientError as exc:
        console.print(f"[red]send failed:[/] {exc}")
        raise typer.Exit(1)
    if as_json:
        print(json.dumps(result))
    else:
        console.print(f"sent {result['user_id']}/{result['thread_id']}:{result['turn_id']} "
                      f"-> {result['topic']}[{result['partition']}]@{result['offset']}")


@app.command()
def replay(
    files: Annotated[list[Path], typer.Argument(help="JSON-lines files of turns, or LoCoMo conversation files.", exists=True, dir_okay=False)],
    fmt: Annotated[str, typer.Option("--format", help="auto | jsonl | locomo.")] = "auto",
    user_prefix: Annotated[str, typer.Option(help="Prefix added to LoCoMo user ids.")] = "",
    broker: BrokerOpt = None,
) -> None:
    """Replay turns from files to `chat.turns`, with a progress bar.

    LoCoMo files become one user per conversation and one thread per session.
    """
    from streams.tools.replay import load_turns

    turns = []
    for path in files:
        turns.extend(load_turns(path, fmt, user_prefix))

    async def go() -> None:
        from streams.tools.client import TurnProducer

        async with TurnProducer(_broker(broker), get_settings().kafka.kafka_one_record_batches) as producer:
            with _progress() as bar:
                task = bar.add_task("replaying turns", total=len(turns))
                pending = []
                for turn in turns:
                    pending.append(await producer.send_turn(turn))
                    bar.advance(task)
                await asyncio.gather(*pending)

    asyncio.run(go())
    console.print(f"replayed {len(turns)} turns")


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=console,
    )


@app.command()
def watch(
    user: Annotated[Optional[str], typer.Option(help="Only this user's events, over the API (its server-sent events).")] = None,
    from_beginning: Annotated[bool, typer.Option(help="Start at the oldest event (with --user: the oldest the worker keeps, SSE_REPLAY_EVENTS).")] = False,
    broker: BrokerOpt = None,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Watch memory events live (Ctrl-C to stop).

    With --user, the user's events come from the API (GET /v1/users/{user}/events, through
    memstream's client), opened, as the API key's scope sees them. Without it, every user's
    events come from `memory.events`, whose content is sealed per user: with the master key
    (MEMSTREAM_MASTER_KEY, MASTER_KEY_FILE, or the one `memstream run` keeps in DATA_DIR) it is
    shown opened, else as "(sealed)".
    """
    from pydantic import ValidationError

    from streams.client import AsyncMemstreamClient, ClientError, StreamReset
    from streams.tools.client import read_topic
    from streams.tools.unseal import TopicUnsealer
    from topics.events import MemoryEvent
    from topics.names import MEMORY_EVENTS

    def show(event: dict) -> None:
        if as_json:
            print(json.dumps(event), flush=True)
        else:
            console.print(
                f"[cyan]{event.get('kind', '?'):>9}[/] {event.get('user_id')} "
                f"rev={event.get('rev')} [{event.get('category')}] {event.get('summary')}"
            )

    async def from_api(user_id: str) -> None:
        async with AsyncMemstreamClient.from_settings(api_url=_api(api)) as client:
            async for item in client.watch(user_id, replay=from_beginning):
                if isinstance(item, StreamReset):
                    console.print("[yellow]events may have been missed[/] (the worker no longer "
                                  "keeps the last one seen)")
                else:
                    show(item.model_dump(mode="json"))

    async def from_topic() -> None:
        settings = _with_kept_master_key(get_settings())
        master = _master_key(settings)
        unsealer = TopicUnsealer(_broker(broker), settings.kafka.app_id, master) if master else None
        async for _key, raw in read_topic(_broker(broker), MEMORY_EVENTS, from_beginning=from_beginning):
            try:
                parsed = MemoryEvent.model_validate(raw)
            except ValidationError:
                continue
            opened = await unsealer.open_event(parsed) if unsealer else None
            show(opened.model_dump(mode="json") if opened else {**raw, "summary": "(sealed)"})

    try:
        asyncio.run(from_api(user) if user else from_topic())
    except ClientError as exc:
        console.print(f"[red]watch failed:[/] {exc}")
        raise typer.Exit(1)
    except KeyboardInterrupt:
        pass


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="The query text.")],
    user: Annotated[str, typer.Option(help="Whose memories.")],
    top_k: Annotated[int, typer.Option(help="How many memories.")] = 5,
    agent: Annotated[str, typer.Option(help="Asking agent: its category allowlist applies (categories.yaml).")] = "supervisor",
    category: Annotated[Optional[list[str]], typer.Option(help="Only this category (repeatable; must be in the agent's allowlist).")] = None,
    threshold: Annotated[Optional[float], typer.Option(help="Drop items with a lower score (the probability, 0-1, that an item answers the query).")] = None,
    budget_tokens: Annotated[Optional[int], typer.Option(help="Token budget of the answer.")] = None,
    thread: Annotated[Optional[str], typer.Option(help="Thread of --since-rev.")] = None,
    since_rev: Annotated[Optional[int], typer.Option(help="Delta header: changes of --thread since this revision.")] = None,
    filters: Annotated[Optional[str], typer.Option(help='Filters as JSON, e.g. \'{"pinned": true, "importance_min": 3}\'.')] = None,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Query a user's memories (memory.query, docs/architecture.md#read-path, through memstream's client): ranked,
    filtered, with provenance."""
    from streams.client import AsyncMemstreamClient, ClientError, QueryResult

    optional = {"categories": category or None, "threshold": threshold, "budget_tokens": budget_tokens,
                "thread_id": thread, "since_rev": since_rev}
    fields: dict = {k: v for k, v in optional.items() if v is not None}
    if filters:
        try:
            fields["filters"] = json.loads(filters)
        except ValueError:
            console.print("[red]--filters is not valid JSON[/]")
            raise typer.Exit(2)

    async def go() -> QueryResult:
        async with AsyncMemstreamClient.from_settings(api_url=_api(api)) as client:
            return await client.query(user, text, agent=agent, top_k=top_k, mode="full", **fields)

    try:
        answer = asyncio.run(go())
    except ClientError as exc:
        console.print(f"[red]query failed:[/] {exc}")
        raise typer.Exit(1)
    items = [item.model_dump(mode="json") for item in answer.items]
    if as_json:
        keys = ("id", "summary", "type", "category", "state", "score", "similarity",
                "importance", "source_turn_ids", "created_at", "updated_at", "text", "tokens")
        print(json.dumps([{k: item.get(k) for k in keys} for item in items], indent=2))
        return
    if answer.delta and answer.delta.header:
        console.print(answer.delta.header)
    if not items:
        console.print("no memories")
    for item in items:
        console.print(
            f"{item['score']:.3f} [{item['category']}] {item['summary']}  "
            f"[dim]({', '.join(item['source_turn_ids'])})[/]"
        )
    console.print(f"[dim]{answer.tokens} tokens[/]")


@app.command()
def settings(
    markdown: Annotated[bool, typer.Option(
        help="Print docs/configuration.md (every setting, its type, default and meaning) instead.")] = False,
) -> None:
    """Show the effective settings (from the environment; secrets masked)."""
    from pydantic import SecretStr

    from streams.settings import Settings

    if markdown:
        from streams.settings.docs import markdown as configuration_page

        sys.stdout.write(configuration_page())
        return
    current = get_settings()
    for section in Settings.model_fields:
        values = getattr(current, section)
        for name in type(values).model_fields:
            value = getattr(values, name)
            shown = "****" if isinstance(value, SecretStr) and value.get_secret_value() else value
            print(f"{name.upper()}={'' if shown is None else shown}")


@keys_app.command("new")
def keys_new(
    agent: Annotated[str, typer.Option(help="The agent id the key stands for (its category allowlist applies).")],
    role: Annotated[str, typer.Option(help="agent, admin, or metrics (may read /metrics only).")] = "agent",
    user: Annotated[Optional[list[str]], typer.Option(help="Limit the key to this user id (repeatable).")] = None,
) -> None:
    """Make an API key: prints the key (give it to the client) and the entry the worker needs
    (add it to MEMSTREAM_API_KEYS or API_KEYS_FILE; only its hash is kept)."""
    from streams.api import auth

    if role not in ("agent", "admin", "metrics"):
        console.print("[red]--role must be agent, admin or metrics[/]")
        raise typer.Exit(2)
    key = auth.new_key()
    entry = auth.entry_for(key, agent, role, user)  # type: ignore[arg-type]
    print(key)
    console.print("worker entry (add to the JSON list of MEMSTREAM_API_KEYS or API_KEYS_FILE):")
    print(entry.model_dump_json(exclude_none=True))


@keys_app.command("master")
def keys_master() -> None:
    """Make a master key: 32 random bytes, url-safe base64. Give the same one to every worker
    (MEMSTREAM_MASTER_KEY or MASTER_KEY_FILE); it wraps every user's data key, so losing it
    loses every memory, and it must never be stored in Kafka or logged."""
    print(_new_master_key())


@keys_app.command("rotate")
def keys_rotate(
    new_key_file: Annotated[Path, typer.Option(help="File holding the new master key (`memstream keys master`).", exists=True, dir_okay=False)],
    workers_stopped: Annotated[bool, typer.Option(help="Every worker is stopped: skip the consumer-group check (the embedded broker lists members that left).")] = False,
    broker: BrokerOpt = None,
) -> None:
    """Re-wrap every user's data key under a new master key, with every worker stopped.

    The keys configured now (MEMSTREAM_MASTER_KEY or MASTER_KEY_FILE, each of a comma list)
    unwrap; the new one wraps. Then start the workers with MEMSTREAM_MASTER_KEY=NEW,OLD, and
    later NEW alone (docs/privacy.md)."""
    from streams.privacy.crypto import MasterKeys, decode_key, master_keys_of
    from streams.privacy.rotation import UnwrappableKeys
    from streams.tools.key_rotation import WorkersRunning, rotate_changelog
    from streams.tools.unseal import changelog_topic

    settings = get_settings()
    old = master_keys_of(settings.privacy)
    if old is None:
        console.print("[red]no master key configured: set MEMSTREAM_MASTER_KEY or MASTER_KEY_FILE "
                      "to the current one[/]")
        raise typer.Exit(2)
    new = decode_key(new_key_file.read_text(encoding="utf-8"))
    masters = MasterKeys(new, tuple(k for k in old.accepted if k != new))
    topic = changelog_topic(settings.kafka.app_id, "user_keys")
    try:
        report = asyncio.run(rotate_changelog(_broker(broker), topic, masters, settings.kafka.app_id,
                                              check_group=not workers_stopped))
    except (WorkersRunning, UnwrappableKeys) as exc:
        console.print(f"[red]{exc}[/]; nothing was changed")
        raise typer.Exit(1) from None
    console.print(f"{topic}: {report.rewrapped} keys re-wrapped, {report.current} already under "
                  f"the new master key, {report.without_key} users without a key (purged)")


def _show(report: dict[str, Any], as_json: bool, render: Callable[[dict[str, Any], Console], None]) -> None:
    """A bench report as JSON on stdout (`--json`), else as `render`'s tables."""
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        render(report, Console())


@bench_app.command("locomo")
def bench_locomo(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files (any, by path).", exists=True, dir_okay=False)],
    as_json: JsonOpt = False,
    broker: Annotated[Optional[str], typer.Option(help="Use this broker and a running worker instead of starting a fresh embedded stack.")] = None,
    api: ApiOpt = None,
    partitions: Annotated[int, typer.Option(help="Partitions of the fresh stack's topics.")] = 4,
    rate: Annotated[float, typer.Option(help="Produce turns at this rate (turns/s); 0 = all at once, which measures backlog drain rather than per-turn latency.")] = 0.0,
    offline: Annotated[bool, typer.Option(help="Run the stages in this process without Kafka: recall only, in seconds (for tuning extraction).")] = False,
    baseline: Annotated[Optional[str], typer.Option(help="Also run this baseline on the same turns after the run, in the same command: mem0 (its add(infer=False); see `bench mem0`).")] = None,
    mem0_python: Mem0PythonOpt = None,
    mem0_torch_threads: Mem0ThreadsOpt = 0,
    cross_validate: Annotated[bool, typer.Option("--cross-validate", help="Also report recall per half of the conversations (first half, second half), per LoCoMo question category, and each half's gap to the other as development/held-out split.")] = False,
    lifecycle: Annotated[bool, typer.Option("--lifecycle/--no-lifecycle", help="Run the lifecycle (forgetting, consolidation, promotion) during the replay, as a worker does by default; --no-lifecycle is the opt-out (a fresh stack only: a running worker does as it is configured).")] = True,
    live_queries: Annotated[bool, typer.Option("--live-queries", help="Also replay the conversations as a chat backend runs them, reading memory (MEMORY_K items, the turn's text as the query, recorded as a read) before every turn, and report that recall beside the plain replay's.")] = False,
    plot: Annotated[Optional[Path], typer.Option(help="Write the reliability diagram of the items' scores (share holding evidence per score bucket) as PNG here.")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Workers the fresh stack starts (one consumer group; each its own port and data dir). The report's scale_out gives each one's partitions, turns and cores.")] = 1,
    users_per_file: Annotated[int, typer.Option(min=1, help="Replay each file under this many user ids, spread over the partitions, so every partition (and worker) has work; recall is scored on every copy.")] = 1,
    single_worker_rate: Annotated[Optional[float], typer.Option(help="One worker's turns/s on the same turns and machine (e.g. from a --workers 1 run): scale_out.scaling_efficiency = turns/s / (workers x this).")] = None,
    scaling: Annotated[bool, typer.Option("--scaling", help="Measure the one-worker figure too: after the run, a fresh stack with one worker drains the same turns, and scaling_efficiency compares with it.")] = False,
) -> None:
    """Replay LoCoMo conversations through the pipeline and report throughput, latency and recall.

    Prints, in one run: ingest turns/s beside the broker's raw produce->consume rate, end-to-end
    and candidate latency p50/p95/p99, per-stage queued and work time p50/p95, the embedder's
    limit alone (turns/s), the worker's RSS per stored memory, query latency p50/p95,
    recall_any/all@5/10/20 with context size, and the same recall for a raw-turn baseline with
    the same embedder; CPU per turn (the model's apart), Kafka records and bytes per turn per
    topic, and per worker its partitions, turns and cores (scale_out; see docs/capacity.md).
    """
    from streams.eval.bench import render_report, run_locomo_bench, run_offline_bench

    python = _mem0_ready(mem0_python) if baseline is not None else None
    if baseline not in (None, "mem0"):
        console.print(f"unknown baseline {baseline!r}; known: mem0")
        raise typer.Exit(2)
    if cross_validate and len(files) < 2:
        console.print("--cross-validate needs at least two conversation files (one per half)")
        raise typer.Exit(2)
    if cross_validate and users_per_file > 1:
        console.print("--cross-validate splits files into halves: use it with --users-per-file 1")
        raise typer.Exit(2)
    if (workers > 1 or scaling) and (broker or offline):
        console.print("--workers and --scaling start a fresh stack: not with --broker or --offline")
        raise typer.Exit(2)
    if offline:
        report = run_offline_bench(files, console, cross_validated=cross_validate,
                                   lifecycle=lifecycle, live_queries=live_queries,
                                   plot_path=plot)
    else:
        report = run_locomo_bench(files, broker=broker, api=api, partitions=partitions,
                                  console=console, rate=rate, cross_validated=cross_validate,
                                  lifecycle=lifecycle, live_queries=live_queries, plot_path=plot,
                                  workers=workers, users_per_file=users_per_file,
                                  single_worker_rate=single_worker_rate, scaling=scaling)
    if python is not None:
        from streams.eval.bench_mem0 import Mem0RunFailed, attach_mem0
        from streams.eval.locomo import load_conversation

        try:
            attach_mem0(report, [load_conversation(p) for p in files], python, console,
                        mem0_torch_threads)
        except Mem0RunFailed as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(1)
    _show(report, as_json, render_report)


@bench_app.command("query")
def bench_query(
    memories: Annotated[list[int], typer.Option("--memories", help="Memories of the one user (repeatable).")] = [1000, 10000, 100000],
    rounds: Annotated[int, typer.Option(help="Passes over the query set.")] = 5,
    top_k: Annotated[int, typer.Option(help="Items per query.")] = 5,
    budget_tokens: Annotated[int, typer.Option(help="Token budget of our answers.")] = 256,
    embed_max: Annotated[int, typer.Option(help="Documents embedded with the model (cached); the vectors of the others are derived from theirs.")] = 2000,
    store_max: Annotated[int, typer.Option(help="Largest size at which InMemoryStore is compared (its search is a Python loop).")] = 10000,
    after_write: Annotated[bool, typer.Option("--after-write/--no-after-write", help="Also time ours with one memory written before each query (ours_after_write), as in a live chat.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """memory.query p50/p95 at N memories beside the query embedding alone (and the p95 ratio)
    and LangGraph's InMemoryStore (the worker's embedder, EMBEDDER, for all; same queries, same
    run); with RETRIEVAL_MODE=hybrid, dense retrieval beside it and the BM25 scores' time from
    a fresh index and after one change; ours with one memory written before each query too
    (--after-write). Memories are seeded in process, in bulk; document embeddings are cached under
    DATA_DIR."""
    from streams.app.services import settings_embedder
    from streams.eval.bench_query import render, run_query_bench
    from streams.read.fusion import Retrieval

    settings = get_settings()
    report = run_query_bench(memories, rounds=rounds, top_k=top_k, budget_tokens=budget_tokens,
                             cache_dir=settings.kafka.data_dir / "bench-cache",
                             embedder=settings_embedder(settings),  # the worker's (EMBEDDER)
                             embed_max=embed_max, store_max=store_max, console=console,
                             retrieval=Retrieval.of(settings.read), after_write=after_write)
    _show(report, as_json, render)


@bench_app.command("rebuild")
def bench_rebuild(
    memories: Annotated[int, typer.Option(help="Memories in the table.")] = 1_000_000,
    users: Annotated[int, typer.Option(help="Users they belong to.")] = 2000,
    as_json: JsonOpt = False,
) -> None:
    """Rebuilding the vector index of N memories (what a worker does after a rebalance): the
    time in one go, the time in slices and the longest the event loop was held meanwhile
    (heartbeats run on it), and the RAM the index adds per memory. In process."""
    from streams.eval.bench_rebuild import render, run_rebuild_bench

    report = run_rebuild_bench(memories, users)
    _show(report, as_json, render)


@bench_app.command("embedder")
def bench_embedder(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files: their turns are the texts.", exists=True, dir_okay=False)],
    kinds: Annotated[list[str], typer.Option("--kind", help="Embedder kinds (repeatable); local, the reference, always runs.")] = ["local", "local-onnx", "local-int8"],
    texts: Annotated[int, typer.Option(help="Turn texts embedded in batches per round.")] = 512,
    single: Annotated[int, typer.Option(help="Of them, texts embedded one at a time per round.")] = 64,
    rounds: Annotated[int, typer.Option(help="Rounds; every kind runs once per round.")] = 3,
    as_json: JsonOpt = False,
) -> None:
    """texts/s of each embedder kind side by side (batched and one at a time), and the cosine
    of its vectors to the fp32 reference's. ONNX files are cached under EMBEDDER_CACHE_DIR."""
    from streams.app.services import models_dir
    from streams.eval.bench_embedder import render, run_embedder_bench

    s = get_settings()
    report = run_embedder_bench(files, kinds, texts=texts, single=single, rounds=rounds,
                                batch_size=s.embedding.embed_batch_size, cache_dir=models_dir(s),
                                console=console)
    _show(report, as_json, render)


def _mem0_ready(explicit: str | None) -> str:
    """The mem0 interpreter, checked before any long run; exits 2 with how to install it."""
    from streams.eval.bench_mem0 import Mem0NotInstalled, check_mem0, mem0_python

    python = mem0_python(explicit)
    try:
        check_mem0(python)
    except Mem0NotInstalled as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2)
    return python


@bench_app.command("mem0")
def bench_mem0(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files: every turn is stored.", exists=True, dir_okay=False)],
    mem0_python: Mem0PythonOpt = None,
    mem0_torch_threads: Mem0ThreadsOpt = 0,
    kinds: Annotated[list[str], typer.Option("--kind", help="memstream embedder kinds timed alone (repeatable; default: EMBEDDER).")] = [],
    as_json: JsonOpt = False,
) -> None:
    """mem0's Memory.add(infer=False), one call per turn, beside memstream's embedder alone on
    the same texts (EMBEDDER or --kind, batches of DEDUP_BATCH_SIZE), in one run. mem0 runs in its own
    venv (it needs protobuf < 7; the lock pins 7.x) with the same MiniLM files, offline."""
    from streams.eval.bench_mem0 import Mem0RunFailed, render, run_mem0_bench
    from streams.eval.locomo import load_conversation

    python = _mem0_ready(mem0_python)
    try:
        report = run_mem0_bench([load_conversation(p) for p in files], python, console, kinds,
                                mem0_torch_threads)
    except Mem0RunFailed as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1)
    _show(report, as_json, render)


@bench_app.command("policy")
def bench_policy(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files: real turns that must pass.", exists=True, dir_okay=False)],
    corpus: Annotated[Path, typer.Option(help="JSON lines {text, kind} of chat lines carrying secrets.", exists=True, dir_okay=False)] = Path("tests/data/secrets_corpus.jsonl"),
) -> None:
    """Safety policy: block rate on a secrets corpus and false-positive rate on real turns."""
    from streams.eval.policy_report import policy_report

    print(json.dumps(policy_report(corpus, files, get_settings()), indent=2))


def main() -> None:
    from streams.app.backends import pin_cpu_backends

    pin_cpu_backends()
    app()


if __name__ == "__main__":
    sys.exit(main())
