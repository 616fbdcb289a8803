"""500 slow connections held against a real worker (issue 47: ~20,000 of them once took every
file descriptor, and ingestion failed with EMFILE).

Each slow client sends a request's first line and then a header a byte every half second, never
finishing it; when the worker closes it (the header timeout) it connects again at once, as an
attacker would, so 500 are held all along. Meanwhile /health and a query from other clients
answer, an event stream opened before stays open and delivers, turns produced meanwhile all
become memories, and a burst of connections past the cap is refused at once (503), not queued.
The worker runs with a short header timeout and a cap just above the slow clients.
"""
from __future__ import annotations

import asyncio
import json
import re
import resource
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import aiohttp
import pytest

from streams.api.connections import REFUSED
from tests.integration.conftest import (
    Worker,
    auth_headers,
    make_turn,
    memories,
    own_stack,
    produce,
    query,
    unique_user,
    wait_processed,
)
from tests.integration.test_sse import events

pytestmark = pytest.mark.integration
broker, worker = own_stack()  # a broker of its own: a fresh app id reads chat.turns from the start

SLOW = 500
CAP = 560
"""The worker's cap: the slow clients, the test's own clients, and room for some of a burst."""
BURST = 200
HEADER_TIMEOUT_S = 2.0
DRIP_S = 0.5
GUARD_S = 120.0
"""Longest the test waits for anything that must happen: a guard against a hang, never a measure."""
PETS = ["Luna", "Milo", "Nora", "Rex", "Kiwi", "Toby", "Maple", "Olive"]
OPEN_FILES = 4096


@contextmanager
def open_files_at_least(count: int) -> Iterator[None]:
    """This process's soft open-file limit raised to `count` (within the hard limit) while in
    the block: the slow clients' sockets, and the worker, started from here, inherits it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count if hard == resource.RLIM_INFINITY else min(count, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class SlowClients:
    """`SLOW` clients that each hold a connection with a never-finished request head, reconnecting
    when the worker closes it, until `stop`; `seen` counts what the worker answered them."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stop = asyncio.Event()
        self.held = 0
        self.started = 0  # clients connected at least once
        self.seen: Counter[str] = Counter()

    async def run(self) -> None:
        await asyncio.gather(*(self._client(i) for i in range(SLOW)))

    async def _client(self, i: int) -> None:
        await asyncio.sleep(i * HEADER_TIMEOUT_S / SLOW)  # spread: their deadlines do not all fall at once
        first = True
        while not self.stop.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                self.seen["connect_failed"] += 1
                await asyncio.sleep(DRIP_S)
                continue
            self.held += 1
            if first:
                self.started, first = self.started + 1, False
            try:
                outcome = await self._drip(reader, writer)
            finally:
                self.held -= 1
                writer.close()
            self.seen[outcome] += 1
            if outcome in ("refused", "reset"):
                await asyncio.sleep(DRIP_S / 5)  # at the cap: try again soon, without spinning

    async def _drip(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
        """Send a header a byte at a time until the worker answers or closes: what it did."""
        try:
            writer.write(b"GET /health HTTP/1.1\r\nHost: worker\r\nX-Slow: ")
            while not self.stop.is_set():
                writer.write(b"a")
                try:
                    answer = await asyncio.wait_for(reader.read(1024), DRIP_S)
                except asyncio.TimeoutError:
                    continue
                return ("header_timeout" if answer.startswith(b"HTTP/1.1 408 ") else
                        "refused" if answer.startswith(b"HTTP/1.1 503 ") else "closed")
            return "stopped"
        except OSError:
            return "reset"


async def timed(call: Awaitable[object]) -> float:
    started = time.monotonic()
    await call
    return time.monotonic() - started


async def health(api_url: str) -> None:
    """/health from a new connection, without retrying: it must answer 200 as it is."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=GUARD_S)) as session:
        async with session.get(api_url + "/health") as response:
            assert response.status == 200, await response.text()


async def burst(port: int) -> Counter[str]:
    """`BURST` connections opened at once, sending nothing: what the worker answered each."""
    async def one() -> str:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return "connect_failed"
        try:
            answer = await asyncio.wait_for(reader.read(), GUARD_S)
            return ("refused" if answer == REFUSED else
                    "header_timeout" if answer.startswith(b"HTTP/1.1 408 ") else "closed")
        except OSError:
            return "reset"
        finally:
            writer.close()

    return Counter(await asyncio.gather(*(one() for _ in range(BURST))))


async def worker_metrics(api_url: str) -> dict[str, float]:
    async with aiohttp.ClientSession(headers=auth_headers()) as session:
        async with session.get(api_url + "/metrics") as response:
            text = await response.text()
    found = re.findall(r"^(memstream_http_connections_\w+(?:\{[^}]*\})?) (\S+)$", text, re.M)
    return {name: float(value) for name, value in found if "_created" not in name}


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.1)


def test_five_hundred_slow_connections_starve_nothing(broker, tmp_path):
    with open_files_at_least(OPEN_FILES):
        w = Worker(broker.url, tmp_path / "data", "memstream-slow", tmp_path / "worker.log",
                   env={"WEB_MAX_CONNECTIONS": str(CAP),
                        "WEB_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT_S)}).start()
        try:
            figures = asyncio.run(scenario(w))
        finally:
            w.stop()
    print(json.dumps(figures, indent=1))
    log = w.log_path.read_text(errors="replace")
    assert "Too many open files" not in log and "Traceback" not in log


async def scenario(w: Worker) -> dict[str, object]:
    users = [unique_user("slow") for _ in PETS]
    slow = SlowClients(w.port)
    attack = asyncio.ensure_future(slow.run())
    try:
        await until(lambda: slow.started == SLOW, f"{SLOW} slow clients connected")
        async with events(w.api_url, users[0]) as stream:
            turns = [make_turn(user, "1", f"I adopted a dog named {pet}.") for user, pet in zip(users, PETS)]
            started = time.monotonic()
            await produce(w.broker_url, turns)
            held = [slow.held]
            health_s = []
            for _ in range(5):
                health_s.append(await timed(health(w.api_url)))
                held.append(slow.held)
            open_meanwhile = (await worker_metrics(w.api_url))["memstream_http_connections_open"]
            query_s = await timed(query(w.api_url, users[0], "What pet do I have?"))
            held.append(slow.held)
            created = await asyncio.wait_for(stream.next_created(), GUARD_S)
            assert "Luna" in json.loads(created["data"])["summary"]
        await wait_processed(w.broker_url, turns, timeout=GUARD_S)
        for user, pet in zip(users, PETS):  # nothing lost: every turn is a memory of this worker
            await until_stored(w.api_url, user, pet)
        ingest_s = time.monotonic() - started
        await until(lambda: slow.seen["header_timeout"] >= SLOW, f"{SLOW} closes for the header timeout")
        refusals = await burst(w.port)
        assert refusals["refused"] >= 1, refusals  # at the cap: answered 503 at once, not queued
        assert set(refusals) <= {"refused", "header_timeout", "reset"}, refusals
    finally:
        slow.stop.set()
        await asyncio.wait_for(attack, GUARD_S)
    counted = await worker_metrics(w.api_url)
    closed = counted['memstream_http_connections_closed_total{reason="header_timeout"}']
    assert closed >= slow.seen["header_timeout"] >= SLOW
    assert counted["memstream_http_connections_refused_total"] >= refusals["refused"]
    assert counted["memstream_http_connections_max"] == CAP
    assert set(slow.seen) <= {"header_timeout", "refused", "reset", "stopped", "connect_failed"}, slow.seen
    return {"health_s": {"median": round(statistics.median(health_s), 4), "max": round(max(health_s), 4)},
            "query_s": round(query_s, 4), "turns_to_memories_s": round(ingest_s, 2),
            "slow_held_by_the_test": {"min": min(held), "max": max(held)},
            "open_on_the_worker_meanwhile": open_meanwhile, "slow_clients_saw": dict(slow.seen),
            "burst_saw": dict(refusals), "worker_counted": counted}


async def until_stored(api_url: str, user: str, pet: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not any(pet in m["summary"] for m in await memories(api_url, user)):
        assert time.monotonic() < deadline, f"{user}'s memory of {pet} never landed"
        await asyncio.sleep(0.25)
