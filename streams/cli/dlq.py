"""`memstream dlq list|replay`: inspect the dead-letter topics and re-drive what can be.

The work is `streams.tools.dead_letters` (read, filter, open, judge) and
`streams.tools.redrive` (send back); this module holds the options and the printing. Nothing
of a user's content is printed unless `list --show-text` asks for it.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer
from rich.markup import escape

from streams.cli.common import BrokerOpt, JsonOpt, broker_url, console, progress
from streams.cli.keys import master_key, with_kept_master_key
from streams.settings import get_settings

if TYPE_CHECKING:
    from streams.tools.dead_letters import Inspected, Selection
    from streams.tools.redrive import Outcome
    from streams.tools.unseal import TopicUnsealer

T = TypeVar("T")

dlq_app = typer.Typer(
    help="Dead letters: list what the stages refused, and replay it to its input topic once "
    "the cause is fixed (docs/operations.md#re-driving-dead-letters).", no_args_is_help=True)

TopicOpt = Annotated[Optional[list[str]], typer.Option(
    "--topic", help="A dead-letter topic (chat.turns.dlq, memory.commands.dlq, "
    "memory.candidates.dlq, memory.sinks.dlq) or its input topic (chat.turns, …); repeatable. "
    "Default: every one.")]
ReasonOpt = Annotated[Optional[list[str]], typer.Option(
    "--reason", help="Only this reason (internal_error, invalid_schema, oversized_text, "
    "future_event_time, …); repeatable.")]
StageOpt = Annotated[Optional[list[str]], typer.Option(
    "--stage", help="Only the letters of this stage (ingest, dedup, commands, sinks); repeatable.")]
SinceOpt = Annotated[Optional[str], typer.Option(
    "--since", help="Only letters written at or after this time: ISO 8601 (UTC without a "
    "zone), or a phrase such as '2 hours ago'.")]
UntilOpt = Annotated[Optional[str], typer.Option(
    "--until", help="Only letters written before this time (as --since).")]

LIST_HELP = (
    "List dead letters: one line each (where, when, stage, reason, user, size, whether it can "
    "be replayed and why not), then a count by reason.\n\n"
    "Content stays sealed: sizes and ids only, unless --show-text. Sealed letters are opened "
    "with the master key to tell whether they still open (a purged user's never do).")
REPLAY_HELP = (
    "Replay dead letters: send each one's record back to its input topic (same key, same "
    "bytes, a memstream-replayed-from header), to go through its stage again.\n\n"
    "A letter that did not keep its record whole is skipped, saying why: truncated, redacted, "
    "withheld, unreadable after its user's purge, a sink's. Running it twice is safe: a record "
    "the pipeline already took makes nothing new (deterministic ids, the turn log), and "
    "letters of the same record are sent once per run. Try --dry-run first.")


def _selection(topic: list[str] | None, reason: list[str] | None, stage: list[str] | None,
               since: str | None, until: str | None) -> Selection:
    from streams.tools.dead_letters import InvalidSelection, Selection

    try:
        return Selection.of(topic or (), reason or (), stage or (), since, until)
    except InvalidSelection as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
        raise typer.Exit(2) from None


def _unsealer(bootstrap: str) -> TopicUnsealer | None:
    """The master key's opener of sealed letters (MEMSTREAM_MASTER_KEY, MASTER_KEY_FILE, or
    the key `memstream run` keeps in DATA_DIR); None without one."""
    from streams.tools.unseal import TopicUnsealer

    settings = with_kept_master_key(get_settings())
    master = master_key(settings)
    if master is None:
        console.print("[yellow]no master key configured[/] (MEMSTREAM_MASTER_KEY or "
                      "MASTER_KEY_FILE): sealed letters cannot be opened, nor replayed")
        return None
    return TopicUnsealer(bootstrap, settings.kafka.app_id, master)


async def _inspected(bootstrap: str, selection: Selection) -> list[Inspected]:
    """The selected letters read, opened and judged, with a progress bar."""
    from streams.tools.dead_letters import inspect_all, read_dead_letters

    unsealer = _unsealer(bootstrap)
    with progress() as bar:
        reading = bar.add_task("reading dead letters", total=None)
        letters = await read_dead_letters(
            bootstrap, selection, progress=lambda done, total: bar.update(reading, completed=done, total=total))
        if unsealer is not None and letters:
            await unsealer.refresh()  # every user's key, read once
        opening = bar.add_task("checking", total=len(letters))
        return await inspect_all(letters, unsealer,
                                 progress=lambda done, total: bar.update(opening, completed=done))


def _run(work: Coroutine[Any, Any, T]) -> T:
    """`work` run; a broker that cannot be reached is a one-line error (exit 1)."""
    from aiokafka.errors import KafkaError

    from streams.errors import BrokerError

    try:
        return asyncio.run(work)
    except (KafkaError, BrokerError, OSError) as exc:
        console.print(f"[red]broker failed:[/] {escape(str(exc) or type(exc).__name__)}")
        raise typer.Exit(1) from None


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def _line(item: Inspected) -> str:
    from streams.tools.dead_letters import described

    d = described(item)
    who = f"user {d['user_id']}" if d["user_id"] else "no user"
    ref = f" ref {d['ref']}" if d["ref"] else ""
    fate = ("[green]replayable[/]" if d["replayable"] else
            f"[yellow]not replayable[/]: {escape(d['why_not'])} ({escape(d['why_not_text'])})")
    size = _size(d["raw_size"] if d["raw_size"] is not None else d["size"])
    return escape(f"{d['dlq']}/{d['partition']}/{d['offset']}  {d['at'][:19]}Z  {d['stage']}  "
                  f"{d['reason']}  {who}{ref}  {size}  ") + fate


def _show_text(item: Inspected) -> None:
    if item.kept is None:
        console.print("    [dim](no text: not kept, or sealed and not opened)[/]")
        return
    console.print("    " + escape(item.kept.decode("utf-8", "replace")), highlight=False,
                  soft_wrap=True)


@dlq_app.command("list", help=LIST_HELP)
def dlq_list(
    topic: TopicOpt = None,
    reason: ReasonOpt = None,
    stage: StageOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    show_text: Annotated[bool, typer.Option(
        "--show-text", help="Also print each letter's kept bytes, opened with the master key: "
        "a user's content, in clear.")] = False,
    broker: BrokerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """`memstream dlq list` (`LIST_HELP`)."""
    from streams.tools.dead_letters import described, summary

    bootstrap = broker_url(broker)
    items = _run(_inspected(bootstrap, _selection(topic, reason, stage, since, until)))
    counts = summary(items)
    if as_json:
        letters = [described(item) | ({"text": item.kept.decode("utf-8", "replace")
                                       if item.kept is not None else None} if show_text else {})
                   for item in items]
        print(json.dumps({"dead_letters": letters, "summary": counts}, indent=2))
        return
    for item in items:
        console.print(_line(item), highlight=False, soft_wrap=True)
        if show_text:
            _show_text(item)
    reasons = ", ".join(f"{r} {n}" for r, n in counts["by_reason"].items()) or "none"
    console.print(f"{counts['count']} dead letters ({escape(reasons)}); "
                  f"{counts['replayable']} replayable", highlight=False)


@dlq_app.command("replay", help=REPLAY_HELP)
def dlq_replay(
    topic: TopicOpt = None,
    reason: ReasonOpt = None,
    stage: StageOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Say what would be replayed; send nothing.")] = False,
    broker: BrokerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """`memstream dlq replay` (`REPLAY_HELP`)."""
    from streams.tools.redrive import ProducerSender, replay, tally

    bootstrap = broker_url(broker)
    selection = _selection(topic, reason, stage, since, until)

    async def go() -> list[Outcome]:
        items = await _inspected(bootstrap, selection)
        with progress() as bar:
            task = bar.add_task("would replay" if dry_run else "replaying", total=len(items))

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done)

            if dry_run:
                return await replay(items, None, advance)
            async with ProducerSender(bootstrap, get_settings().kafka.kafka_one_record_batches) as sender:
                return await replay(items, sender, advance)

    outcomes = _run(go())
    counts = tally(outcomes)
    if as_json:
        print(json.dumps({"dry_run": dry_run, "outcomes": [o.described() for o in outcomes],
                          **counts}, indent=2))
        return
    for outcome in outcomes:
        if outcome.action in ("skipped", "duplicate"):
            where = outcome.item.stored.where
            why = (f"duplicate of {outcome.duplicate_of}" if outcome.duplicate_of
                   else f"{outcome.why} ({outcome.item.verdict.why})")
            console.print(f"[dim]skipped[/] {escape(str(where))}: {escape(why)}", highlight=False,
                          soft_wrap=True)
    skipped = ", ".join(f"{code} {n}" for code, n in counts["skipped"].items())
    done = (f"would replay {counts['would_replay']}" if dry_run
            else f"replayed {counts['replayed']}")
    console.print(f"{done} of {len(outcomes)} dead letters; {counts['duplicate']} duplicates; "
                  f"skipped {sum(counts['skipped'].values())}" + (f" ({skipped})" if skipped else ""),
                  highlight=False)
