"""The client's commands: `send` and `replay` turns, `watch` memory events, `query` memories.

Each connects to Kafka through clients that check the connection first (within
KAFKA_CONNECT_TIMEOUT_SECONDS: `streams.kafka.security.kafka_producer`): a broker that cannot be
reached, or refuses the TLS handshake or the login, and settings that cannot work, end the
command with one line saying why (exit 1; invalid settings exit 2), never a traceback."""
from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer

from streams.cli.common import (
    ApiOpt,
    BrokerOpt,
    JsonOpt,
    api_url,
    broker_url,
    console,
    fail,
    progress,
    settings,
)
from streams.cli.keys import master_key, with_kept_master_key

client_app = typer.Typer()


def _broker_failures() -> tuple[type[BaseException], ...]:
    """What a Kafka client may fail with besides the client library's `ClientError`: memstream's
    `BrokerError` (`BrokerConnectionError`, `KafkaSettingsError`) and aiokafka's own."""
    from aiokafka.errors import KafkaError

    from streams.errors import BrokerError

    return BrokerError, KafkaError


@client_app.command()
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

    from streams.kafka.security import client_kwargs
    from streams.client import AsyncMemstreamClient, ClientError
    from topics.turns import Turn

    now = datetime.now(timezone.utc)
    try:
        # the options are text: pydantic parses `role` and `ts` as it does those of a record
        turn = Turn.model_validate({
            "user_id": user, "thread_id": thread,
            "turn_id": turn_id or now.strftime("%Y%m%dT%H%M%S%f"),
            "role": role, "speaker": speaker, "text": text, "ts": ts or now.isoformat(),
        })
    except ValidationError as exc:
        console.print(f"[red]invalid turn:[/] {exc}")
        raise typer.Exit(2)

    kafka = settings().kafka
    bootstrap = broker_url(broker)

    async def go() -> dict:
        async with AsyncMemstreamClient(bootstrap, kafka_security=client_kwargs(kafka),
                                        connect_timeout=kafka.kafka_connect_timeout_seconds) as client:
            sent = await client.send_turn(turn)
        return {"topic": sent.topic, "partition": sent.partition, "offset": sent.offset,
                "user_id": turn.user_id, "thread_id": turn.thread_id, "turn_id": turn.turn_id}

    try:
        result = asyncio.run(go())
    except (ClientError, *_broker_failures()) as exc:
        fail("send failed", exc)
    if as_json:
        print(json.dumps(result))
    else:
        console.print(f"sent {result['user_id']}/{result['thread_id']}:{result['turn_id']} "
                      f"-> {result['topic']}[{result['partition']}]@{result['offset']}")


@client_app.command()
def replay(
    files: Annotated[list[Path], typer.Argument(help="JSON-lines files of turns, or LoCoMo conversation files.", exists=True, dir_okay=False)],
    fmt: Annotated[str, typer.Option("--format", help="auto | jsonl | locomo.")] = "auto",
    user_prefix: Annotated[str, typer.Option(help="Prefix added to LoCoMo user ids.")] = "",
    broker: BrokerOpt = None,
) -> None:
    """Replay turns from files to `chat.turns`, with a progress bar.

    LoCoMo files become one user per conversation and one thread per session.
    """
    from streams.tools.replay import ReplayFormatError, load_turns

    turns = []
    try:
        for path in files:
            turns.extend(load_turns(path, fmt, user_prefix))
    except (ReplayFormatError, OSError) as exc:
        fail("replay failed", exc, code=2)
    bootstrap, kafka = broker_url(broker), settings().kafka

    async def go() -> None:
        from streams.tools.client import TurnProducer

        async with TurnProducer(bootstrap, kafka.kafka_one_record_batches) as producer:
            with progress() as bar:
                task = bar.add_task("replaying turns", total=len(turns))
                pending = []
                for turn in turns:
                    pending.append(await producer.send_turn(turn))
                    bar.advance(task)
                await asyncio.gather(*pending)

    try:
        asyncio.run(go())
    except _broker_failures() as exc:
        fail("replay failed", exc)
    console.print(f"replayed {len(turns)} turns")


@client_app.command()
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

    from streams.client import AsyncMemstreamClient, ClientError, StreamReset
    from streams.tools.client import read_topic
    from streams.tools.unseal import TopicUnsealer
    from topics.events_wire import events_of
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
        async with AsyncMemstreamClient.from_settings(api_url=api_url(api)) as client:
            async for item in client.watch(user_id, replay=from_beginning):
                if isinstance(item, StreamReset):
                    console.print("[yellow]events may have been missed[/] (the worker no longer "
                                  "keeps the last one seen)")
                else:
                    show(item.model_dump(mode="json"))

    async def from_topic() -> None:
        kept = with_kept_master_key(settings())
        master = master_key(kept)
        unsealer = TopicUnsealer(broker_url(broker), kept.kafka.app_id, master) if master else None
        async for _key, raw in read_topic(broker_url(broker), MEMORY_EVENTS, from_beginning=from_beginning):
            try:
                events = events_of(raw)
            except ValueError:  # pydantic's ValidationError, or DeflatedRecordError
                continue
            for event in events:
                opened = await unsealer.open_event(event) if unsealer else None
                show(opened.model_dump(mode="json") if opened
                     else {**event.model_dump(mode="json"), "summary": "(sealed)"})

    try:
        asyncio.run(from_api(user) if user else from_topic())
    except (ClientError, *_broker_failures()) as exc:
        fail("watch failed", exc)
    except KeyboardInterrupt:
        pass


@client_app.command()
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
    explain: Annotated[bool, typer.Option("--explain", help="Show the figures behind each score (similarity, relevance, rank_score).")] = False,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Query a user's memories (memory.query, docs/architecture.md#read-path, through memstream's client): ranked,
    filtered, with provenance; best score first."""
    from streams.client import AsyncMemstreamClient, ClientError, QueryResult

    optional = {"categories": category or None, "threshold": threshold, "budget_tokens": budget_tokens,
                "thread_id": thread, "since_rev": since_rev, "explain": explain or None}
    fields: dict = {k: v for k, v in optional.items() if v is not None}
    if filters:
        try:
            fields["filters"] = json.loads(filters)
        except ValueError:
            console.print("[red]--filters is not valid JSON[/]")
            raise typer.Exit(2)

    async def go() -> QueryResult:
        async with AsyncMemstreamClient.from_settings(api_url=api_url(api)) as client:
            return await client.query(user, text, agent=agent, top_k=top_k, mode="full", **fields)

    try:
        answer = asyncio.run(go())
    except (ClientError, *_broker_failures()) as exc:
        fail("query failed", exc)
    items = [item.model_dump(mode="json") for item in answer.items]
    if as_json:
        keys = ("id", "summary", "type", "category", "state", "score", "importance",
                "source_turn_ids", "created_at", "updated_at", "text", "tokens", *(("explain",) if explain else ()))
        print(json.dumps([{k: item.get(k) for k in keys} for item in items], indent=2))
        return
    if answer.delta and answer.delta.header:
        console.print(answer.delta.header)
    if not items:
        console.print("no memories")
    for item in items:  # in the answer's order: best score first
        why = ""
        if explain and item.get("explain"):
            why = " [dim]" + " ".join(f"{k}={v:.3f}" for k, v in item["explain"].items()) + "[/]"
        console.print(
            f"{item['score']:.3f} [{item['category']}] {item['summary']}  "
            f"[dim]({', '.join(item['source_turn_ids'])})[/]{why}"
        )
    console.print(f"[dim]{answer.tokens} tokens[/]")
