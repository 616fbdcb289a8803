"""How fast turns go to `chat.turns`: memstream's client beside the bench's producer.

    .venv/bin/python examples/produce_throughput.py            # starts an embedded broker
    .venv/bin/python examples/produce_throughput.py --broker 127.0.0.1:9092 --turns 20000

Each way produces the same turns (`--users` users, texts of about 120 characters) and waits
until every one is acknowledged; the ways take turns, `--rounds` times after a round that
warms up, and the median rate is printed. The bench's producer (streams/tools/client.py, what `bench locomo` uses) has
idempotence off and no linger; the client's is idempotent with acks=all and a 5 ms linger.
Only the broker runs (no worker), so this measures producing alone.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from streams.app.topic_admin import create_topics
from streams.client import AsyncMemstreamClient, MemstreamClient, Turn
from streams.tools.broker import EmbeddedBroker
from streams.tools.client import TurnProducer
from streams.app.topology import ALL_TOPICS


def make_turns(count: int, users: int, tag: str) -> list[Turn]:
    start = datetime(2024, 5, 1, tzinfo=timezone.utc)
    return [Turn(user_id=f"user-{i % users}", thread_id="t1", turn_id=f"{tag}-{i}", role="user",  # type: ignore[arg-type]
                 text=f"Turn {i}: I walked the dog to the park and then we had lunch by the river.",
                 ts=start + timedelta(seconds=i)) for i in range(count)]


async def bench_producer(broker: str, turns: list[Turn]) -> None:
    """What benchmarks/bench.py `ingest` does: queue every turn, then flush."""
    async with TurnProducer(broker) as producer:
        for turn in turns:
            await producer.send_turn(turn)
        await producer.flush()


async def client_batch(broker: str, turns: list[Turn]) -> None:
    async with AsyncMemstreamClient(broker) as client:
        await client.send_turns(turns)


async def client_concurrent(broker: str, turns: list[Turn]) -> None:
    """One `send_turn` per turn, all at once: many chat sessions, each awaiting its ack."""
    async with AsyncMemstreamClient(broker) as client:
        await asyncio.gather(*(client.send_turn(turn) for turn in turns))


async def client_sync_batch(broker: str, turns: list[Turn]) -> None:
    def run() -> None:
        with MemstreamClient(broker) as client:
            client.send_turns(turns)

    await asyncio.to_thread(run)


async def client_one_by_one(broker: str, turns: list[Turn]) -> None:
    """Each turn awaited before the next: one session's rate, bound by the ack's round trip."""
    async with AsyncMemstreamClient(broker) as client:
        for turn in turns:
            await client.send_turn(turn)


WAYS: dict[str, Callable[[str, list[Turn]], Awaitable[None]]] = {
    "bench producer (send + flush)": bench_producer,
    "client send_turns": client_batch,
    "client send_turn x N concurrent": client_concurrent,
    "client (sync) send_turns": client_sync_batch,
}


async def measure(broker: str, turns: int, users: int, rounds: int, one_by_one: int) -> None:
    await create_topics(broker, ALL_TOPICS, 4)
    rates: dict[str, list[float]] = {name: [] for name in WAYS}
    for round_ in range(rounds + 1):  # round 0 warms up (connections, code paths): not counted
        for number, (name, way) in enumerate(WAYS.items()):
            batch = make_turns(turns, users, f"r{round_}-w{number}")
            started = time.perf_counter()
            await way(broker, batch)
            if round_:
                rates[name].append(turns / (time.perf_counter() - started))
    single = make_turns(one_by_one, users, "single")
    started = time.perf_counter()
    await client_one_by_one(broker, single)
    print(f"{turns} turns, {users} users, median of {rounds} rounds:")
    for name, values in rates.items():
        print(f"  {name:34s} {statistics.median(values):9.0f} turns/s")
    print(f"  {'client send_turn, one at a time':34s} "
          f"{one_by_one / (time.perf_counter() - started):9.0f} turns/s ({one_by_one} turns)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", help="bootstrap servers (default: start an embedded broker)")
    parser.add_argument("--turns", type=int, default=20000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-by-one", type=int, default=500, help="turns of the one-at-a-time run")
    args = parser.parse_args()
    broker = None
    if args.broker is None:
        broker = EmbeddedBroker(log_path=Path(tempfile.mkdtemp()) / "broker.log").start()
    try:
        asyncio.run(measure(args.broker or broker.url, args.turns, args.users, args.rounds,
                            args.one_by_one))
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
