"""`memstream memories list|get|edit|delete|history|export`: a user's memories, through
memstream's client (`streams.client`, the registry API), as `query` reads them.

Each call shows a spinner while it runs: a worker that is still joining (its tables recovering,
its partitions being assigned) answers 503 and the client asks again after its Retry-After. A
failure ends the command with one line saying why (exit 1; no such memory: exit 1 too), never a
traceback; `--json` prints the API's own JSON.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer

from streams.cli.common import ApiOpt, JsonOpt, api_url, console, fail

memories_app = typer.Typer(help="A user's memories: list, read, edit, delete, history, export.",
                           no_args_is_help=True)
T = TypeVar("T")
UserOpt = Annotated[str, typer.Option("--user", help="Whose memories (user_id).")]
MemoryArg = Annotated[str, typer.Argument(help="The memory's id.")]


def _call(what: str, api: str | None, call: Callable[[Any], Awaitable[T]]) -> T:
    """Run `call(client)` on a client of the local service, with a spinner; a failure is one
    line (`fail`)."""
    from streams.client import AsyncMemstreamClient, ClientError

    async def go() -> T:
        async with AsyncMemstreamClient.from_settings(api_url=api_url(api)) as client:
            return await call(client)

    try:
        with console.status(f"{what}…", spinner="dots"):
            return asyncio.run(go())
    except ClientError as exc:
        fail(f"{what} failed", exc)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _line(memory: dict[str, Any]) -> str:
    from rich.markup import escape

    flags = " [yellow]pinned[/]" if memory.get("pinned") else ""
    state = "" if memory.get("state") == "active" else f" [dim]({memory.get('state')})[/]"
    return (f"[cyan]{memory['id']}[/] [{escape(memory['category'])}] {escape(memory['summary'])}"
            f"{state}{flags}")


@memories_app.command("list")
def list_memories(
    user: UserOpt,
    category: Annotated[Optional[list[str]], typer.Option(help="Only this category (repeatable).")] = None,
    state: Annotated[Optional[str], typer.Option(help="active, soft_deleted, archived or superseded (default: all but purged).")] = None,
    pinned: Annotated[Optional[bool], typer.Option("--pinned/--not-pinned", help="Only pinned (or unpinned) memories.")] = None,
    text: Annotated[Optional[str], typer.Option("--text", help="Only those whose summary, tags or entities hold this.")] = None,
    thread: Annotated[Optional[str], typer.Option(help="Only those made in this thread.")] = None,
    limit: Annotated[int, typer.Option(help="How many (one page).")] = 50,
    offset: Annotated[int, typer.Option(help="Skip this many first (the next page).")] = 0,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List a user's memories, newest first, with provenance."""
    page = _call("listing memories", api, lambda c: c.memories(
        user, category=category, state=state, pinned=pinned, text=text, thread_id=thread,
        limit=limit, offset=offset))
    items = [m.model_dump(mode="json") for m in page.items]
    if as_json:
        _print_json({"user_id": page.user_id, "total": page.total, "offset": page.offset,
                     "next_offset": page.next_offset, "items": items})
        return
    if not items:
        console.print("no memories")
    for memory in items:
        console.print(_line(memory), soft_wrap=True)
    more = f"; next page: --offset {page.next_offset}" if page.next_offset is not None else ""
    console.print(f"[dim]{len(items)} of {page.total}{more}[/]")


@memories_app.command("get")
def get(memory_id: MemoryArg, user: UserOpt, api: ApiOpt = None, as_json: JsonOpt = False) -> None:
    """Show one memory: its summary, state, category and provenance."""
    memory = _call("reading the memory", api, lambda c: c.get(user, memory_id))
    if memory is None:
        fail("no such memory", f"{user} has no memory {memory_id} this key may see")
    doc = memory.model_dump(mode="json")
    if as_json:
        _print_json(doc)
        return
    console.print(_line(doc), soft_wrap=True)
    console.print(f"[dim]{doc['type']}, importance {doc['importance']}, from "
                  f"{', '.join(doc['source_turn_ids']) or '-'}; updated {doc['updated_at']}[/]")


@memories_app.command("edit")
def edit(memory_id: MemoryArg, text: Annotated[str, typer.Argument(help="The new summary (1-2 self-contained sentences).")],
         user: UserOpt, api: ApiOpt = None, as_json: JsonOpt = False) -> None:
    """Replace a memory's summary (through the write policy); waits until it is applied."""
    result = _call("editing the memory", api, lambda c: c.update(user, memory_id, text))
    _written(result, f"edited {memory_id}", as_json)


@memories_app.command("delete")
def delete(memory_id: MemoryArg, user: UserOpt, api: ApiOpt = None, as_json: JsonOpt = False) -> None:
    """Soft-delete a memory (restorable); waits until it is applied."""
    result = _call("deleting the memory", api, lambda c: c.delete(user, memory_id))
    _written(result, f"deleted {memory_id} (restorable)", as_json)


@memories_app.command("history")
def history(memory_id: MemoryArg, user: UserOpt, api: ApiOpt = None, as_json: JsonOpt = False) -> None:
    """A memory's audit trail, oldest first: each change, who made it, when."""
    entries = _call("reading the history", api, lambda c: c.history(user, memory_id))
    rows = [e.model_dump(mode="json") for e in entries]
    if as_json:
        _print_json(rows)
        return
    from rich.markup import escape

    for row in rows:
        summary = (row.get("new") or {}).get("summary") or ""
        console.print(f"{row['ts']} [cyan]{row['verb']:<10}[/] {escape(row['actor'])} "
                      f"{escape(summary)}", soft_wrap=True)


@memories_app.command("export")
def export(user: UserOpt,
           out: Annotated[Optional[Path], typer.Option("--out", help="Write the JSON here (default: stdout).", dir_okay=False)] = None,
           api: ApiOpt = None) -> None:
    """Everything kept about a user that the key may see, as JSON (memories, history, blocked topics)."""
    exported = _call("exporting", api, lambda c: c.export(user))
    text = exported.model_dump_json(indent=2)
    if out is None:
        print(text)
        return
    out.write_text(text + "\n", encoding="utf-8")
    console.print(f"exported {len(exported.memories)} memories of {user} to {out}")


def _written(result: Any, done: str, as_json: bool) -> None:
    if as_json:
        _print_json(result.model_dump(mode="json"))
    else:
        console.print(done)
