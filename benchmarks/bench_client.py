"""Read-your-writes through the client (`memstream bench client`): the time from
`send_turn(turn, wait=True)` to the memories it returns, at a steady rate of turns.

A chat backend that needs what a turn taught before its next reply calls `send_turn(...,
wait=True)` (or `add`): the call produces the turn, waits on `memory.progress` until every fact
of it has an outcome (`streams.client.progress`), then reads back the memories it made or
changed through the API. This bench does that for every turn of LoCoMo conversations, started
at `rate` turns a second (each call its own task, as concurrent requests of a backend are),
spread over `users` user ids so the partitions share the work as a backend's users do, against
a fresh embedded stack (or a running one), and reports the latency percentiles of the whole
call, of the turns that made or changed a memory, and the outcomes.
"""
from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.bench_stages import percentiles
from streams.client import ApplyTimeout, AsyncMemstreamClient, TurnResult
from streams.tools.locomo import load_conversation
from topics.turns import Turn

QS = (50, 95, 99)


def spread(turns: Sequence[Turn], users: int) -> list[Turn]:
    """The turns under `users` user ids (`<user>-<i>`): turn n goes to user n mod `users`,
    keeping its session's thread."""
    return [t.model_copy(update={"user_id": f"{t.user_id}-{n % users}"}) for n, t in enumerate(turns)]


async def timed_calls(client: AsyncMemstreamClient, turns: Sequence[Turn], rate: float,
                      timeout: float) -> list[tuple[float, TurnResult | None]]:
    """Each turn's `send_turn(wait=True)` started on schedule (`rate` a second): (seconds the
    call took, its result or None when not applied within `timeout`)."""
    async def one(turn: Turn, at: float) -> tuple[float, TurnResult | None]:
        await asyncio.sleep(max(0.0, at - time.perf_counter()))
        started = time.perf_counter()
        try:
            result: TurnResult | None = await client.send_turn(turn, wait=True, timeout=timeout)
        except ApplyTimeout:
            result = None
        return time.perf_counter() - started, result

    start = time.perf_counter() + 0.5
    return await asyncio.gather(*(one(t, start + i / rate) for i, t in enumerate(turns)))


async def warm_up(client: AsyncMemstreamClient, like: Turn, timeout: float) -> None:
    """One turn of a user of its own, waited on, before the timed ones: a fresh worker loads
    its model after it says ready, and the client starts its progress follower on its first
    wait; neither is what a running backend's turn waits for."""
    turn = like.model_copy(update={"user_id": "bench-warm-up", "turn_id": "warm-up",
                                   "text": "I adopted a dog named Luna last year."})
    await client.send_turn(turn, wait=True, timeout=timeout)


def report_of(calls: Sequence[tuple[float, TurnResult | None]], rate: float, users: int,
              wall_s: float) -> dict[str, Any]:
    done = [(s * 1000, r) for s, r in calls if r is not None]
    with_memories = [ms for ms, r in done if r.memories]
    outcomes: Counter[str] = Counter(o for _, r in done for o in r.outcomes)
    return {
        "turns": len(calls), "rate_asked": rate, "wall_s": round(wall_s, 1),
        "users": users, "not_applied_in_time": len(calls) - len(done),
        "latency_ms": percentiles([ms for ms, _ in done], QS),
        "latency_ms_turns_with_memories": percentiles(with_memories, QS),
        "turns_with_memories": len(with_memories),
        "memories_returned": sum(len(r.memories) for _, r in done),
        "outcomes": dict(outcomes.most_common()),
    }


def run_client_bench(files: Sequence[Path], *, rate: float, users: int, limit: int | None,
                     timeout: float, broker: str | None = None, api: str | None = None,
                     api_key: str | None = None, partitions: int = 4, read_back: bool = True,
                     console: Console | None = None) -> dict[str, Any]:
    """Start a fresh stack (unless `broker` and `api` name a running one), send the files' turns
    (the first `limit`) at `rate` with `wait=True`, and report (module doc). Without
    `read_back` the client has no API URL: a call returns once the turn is applied, without
    reading its memories (the wait on `memory.progress` alone)."""
    from streams.tools.stack import start_stack

    turns = [t for path in files for t in load_conversation(path).turns]
    turns = spread(turns[:limit] if limit else turns, users)
    stack = None
    if broker is None or api is None:
        if console is not None:
            console.print("starting a fresh embedded stack …")
        stack = start_stack(partitions)
        broker, api, api_key = stack.broker_url, stack.api_url, stack.api_key
    try:
        async def go() -> tuple[list[tuple[float, TurnResult | None]], float]:
            async with AsyncMemstreamClient(broker, api if read_back else None, api_key,
                                            apply_timeout=timeout) as client:
                await warm_up(client, turns[0], timeout)
                started = time.perf_counter()
                calls = await timed_calls(client, turns, rate, timeout)
                return calls, time.perf_counter() - started

        calls, wall_s = asyncio.run(go())
    finally:
        if stack is not None:
            stack.close()
    return {"stack": "fresh embedded" if stack is not None else "running", "partitions": partitions,
            "read_back": read_back, **report_of(calls, rate, users, wall_s)}


def render(report: dict[str, Any], console: Console) -> None:
    table = Table(title=f"send_turn(wait=True) → memories returned, {report['turns']} turns at "
                        f"{report['rate_asked']:g}/s, {report['users']} users, the last applied "
                        f"after {report['wall_s']:g} s")
    table.add_column("turns")
    for q in QS:
        table.add_column(f"p{q} ms", justify="right")
    table.add_column("n", justify="right")
    for name, key, n in (("all applied", "latency_ms", report["turns"] - report["not_applied_in_time"]),
                         ("with memories", "latency_ms_turns_with_memories", report["turns_with_memories"])):
        table.add_row(name, *(f"{report[key][f'p{q}']:.0f}" for q in QS), str(n))
    console.print(table)
    console.print(f"outcomes: {report['outcomes']}; memories returned: {report['memories_returned']}; "
                  f"not applied in time: {report['not_applied_in_time']}")
