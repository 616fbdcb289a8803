"""`memstream bench restart`: how long a worker holding N memories takes to serve again after a
restart, beside the time to rebuild its in-RAM index alone.

A worker keeps its tables in RocksDB under its DATA_DIR and the embedded broker its topics in
the object store of `streams.tools.object_store` (`DiskStorage`), so a restart reopens both:
Faust recovers each table from the offsets RocksDB holds, and the first use of the vector index
(a query, a dedup batch) rebuilds it from the `memories` table (`streams.memory.store`). This
bench, in one run:

1. starts a fresh embedded broker on disk and one worker (its own DATA_DIR and master key), both
   on fixed ports and directories that outlive their processes (`RestartStack`);
2. fills it with N memories of U users without paying the embedding model per memory: sealed
   `memory.candidates` records whose candidates carry their vectors (random unit vectors of the
   embedder's size, so dedup creates every one; `bench query`'s realistic summaries), sealed in
   transit with the stack's master key as a web handler seals what it sends, and follows
   `memory.progress` until every one has its dedup outcome;
3. stops the worker and the broker cleanly (SIGTERM), starts both again and times, from the start
   command, `/health` ready and the first query answered (a query needs the index: that is ready
   to serve), with the worker's CPU seconds at both; then `kill -9`s the worker, the broker and
   the object store, and times the same; after each start every user's memory count is checked
   against what was filled. A start that does not serve within its timeout is reported (not
   raised), with the worker log's last warning;
4. rebuilds the index of the same N memories of U users alone, in process (`bench rebuild`'s
   `run_rebuild_bench`), and puts the ratio of restart → first query to it beside it (the goal of
   issue 47: at most 2);
5. reports the disk the broker's store and the worker's tables take, the fill's memories per
   second and, with `base_cost`, the same clean restart of a fresh stack holding nothing (the
   cost of a start itself: imports, Faust, the group join, the model load).

Each start's worker log is kept (`worker-<n>.log`, n counting the stack's starts) and its
milestones are read into the report (`timeline`: the first line, Faust starting, the group
joined, the model loaded, the index rebuilt, the worker's `ready` line). A kept stack
(`workdir`) holds its master and admin keys too, so it can be started again by hand and its
tables opened. Findings and figures: docs/benchmarks.md#restart.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
from aiokafka import AIOKafkaConsumer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

from benchmarks.bench_query import synthetic_memories
from benchmarks.bench_stages import process_cpu_seconds
from streams.api import auth
from streams.app.topic_admin import create_topics
from streams.app.topology import ALL_TOPICS
from streams.errors import BrokerError
from streams.memory.vector_index import encode_vector
from streams.privacy.crypto import encode_key, new_key
from streams.privacy.user_keys import UserKeys
from streams.providers.embedders import MINILM_INT8_PROFILE
from streams.settings import get_settings
from streams.tools.broker import DiskStorage, EmbeddedBroker, free_port
from streams.tools.client import kafka_security, make_producer
from streams.tools.stack import start_worker, wait_assigned, Stack
from topics.candidates import Candidate, Fact, record_arrays
from topics.names import MEMORY_CANDIDATES, MEMORY_PROGRESS
from topics.progress import progress_entries
from topics.sealed import Sealed
from topics.turns import Turn

APP_ID = "memstream-bench-restart"
PARTITIONS = 4
"""The topics' partitions (`TOPIC_PARTITIONS`'s default: what `memstream run` makes)."""
FIRST_TS = datetime(2026, 11, 2, 8, tzinfo=timezone.utc)
TURN_SPACING = timedelta(minutes=4)
"""Event time between two memories of one user: 15 an hour, inside the write budget of 20 new
semantic memories an hour (`MEMORY_WRITE_RATE_LIMIT_PER_HOUR`), so none is down-ranked."""
QUERY_TEXT = "Where does Ana's sister live?"
POLL_S = 0.05
"""How often a start's readiness is polled (the figures are this precise)."""
FILL_IDLE_TIMEOUT_S = 180.0


def user_name(u: int) -> str:
    return f"bench-user-{u:05d}"


# --- the fill -----------------------------------------------------------------------------------
def candidates(memories: int, users: int, dim: int = MINILM_INT8_PROFILE.dim,
               seed: int = 11) -> Iterator[Candidate]:
    """`memories` candidates of `users` users (memory i is user i mod `users`'s), each a fact of a
    turn of its own with a random unit vector of `dim` values: distinct (cosines about 0 ± 0.05,
    far below every dedup band), so dedup creates every one."""
    rng = np.random.default_rng(seed)
    for i, memory in enumerate(synthetic_memories(memories)):
        user, nth = user_name(i % users), i // users
        vector = rng.standard_normal(dim).astype(np.float32)
        turn = Turn(user_id=user, thread_id=f"t{nth // 40}", turn_id=f"{i}", role="user",
                    text=memory.summary, ts=FIRST_TS + nth * TURN_SPACING)
        fact = Fact(type="episodic" if memory.type == "episodic" else "semantic",
                    summary=memory.summary, category=memory.category,
                    importance=memory.importance, pinned=memory.pinned)
        yield Candidate(turn=turn, fact=fact, fact_index=0, fact_count=1, confidence=0.9,
                        vector_b64=encode_vector(vector / np.linalg.norm(vector)))


def sealed_records(items: list[Candidate], master_key: bytes) -> Iterator[tuple[str, bytes]]:
    """(user, value) of the `memory.candidates` records carrying `items`, each user's in order,
    as few records as `topics.candidates.record_arrays` allows. Each is sealed in transit with the
    master key (`Sealer.seal_for_transit`'s envelope): only the worker makes a user's data key, on
    the user's partition; dedup opens the record and seals what it keeps with that key."""
    keys = UserKeys({}, master_key)
    by_user: dict[str, list[bytes]] = {}
    for item in items:
        by_user.setdefault(item.turn.user_id, []).append(item.model_dump_json().encode())
    for user, jsons in by_user.items():
        for array in record_arrays(jsons):
            envelope = Sealed(user_id=user, by="transit", sealed=keys.seal_in_transit(user, array))
            yield user, envelope.model_dump_json().encode()


@dataclass
class FillResult:
    memories: int
    seconds: float
    memories_per_s: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)


async def fill(broker_url: str, items: list[Candidate], master_key: bytes, one_record: bool,
               on_done: Callable[[int], None], idle_timeout: float = FILL_IDLE_TIMEOUT_S) -> FillResult:
    """Produce `items` to `memory.candidates` and wait until each has its dedup outcome on
    `memory.progress` (`on_done(n)` as n more do). Raises `BrokerError` when no outcome comes for
    `idle_timeout` seconds."""
    wanted = {(c.turn.user_id, c.turn.turn_id) for c in items}
    consumer = AIOKafkaConsumer(MEMORY_PROGRESS, bootstrap_servers=broker_url,
                                auto_offset_reset="earliest", enable_auto_commit=False,
                                fetch_max_wait_ms=100, **kafka_security())
    await consumer.start()
    producer = make_producer(broker_url, one_record)
    await producer.start()
    result = FillResult(len(items), 0.0)
    started = time.perf_counter()

    async def produce() -> None:
        for user, value in sealed_records(items, master_key):
            await producer.send(MEMORY_CANDIDATES, key=user.encode(), value=value)
        await producer.flush()

    producing = asyncio.create_task(produce())
    done: set[tuple[str, str]] = set()
    try:
        last = time.monotonic()
        while len(done) < len(wanted):
            batch = await consumer.getmany(timeout_ms=500)
            before = len(done)
            for records in batch.values():
                for p in (p for r in records for p in progress_entries(r.value)):
                    key = (p["user_id"], p["turn_id"])
                    if p["stage"] == "dedup" and key in wanted and key not in done:
                        done.add(key)
                        result.outcomes[p["outcome"]] = result.outcomes.get(p["outcome"], 0) + 1
            if len(done) > before:
                on_done(len(done) - before)
                last = time.monotonic()
            if producing.done():
                producing.result()  # a failed send stops the fill here
            else:
                last = time.monotonic()
            if time.monotonic() - last > idle_timeout:
                raise BrokerError(f"no progress for {idle_timeout:.0f}s: {len(done)}/{len(wanted)} applied")
        await producing
    finally:
        if not producing.done():
            producing.cancel()
            await asyncio.gather(producing, return_exceptions=True)
        await producer.stop()
        await consumer.stop()
    result.seconds = round(time.perf_counter() - started, 2)
    result.memories_per_s = round(result.memories / max(result.seconds, 1e-9), 1)
    return result


# --- the stack that restarts ---------------------------------------------------------------------
class RestartStack:
    """The embedded broker on disk and one worker, on ports and directories fixed for the stack's
    life: stopping either (cleanly or with `kill -9`) keeps the broker's object store and the
    worker's DATA_DIR, and `start` brings both back on them. `close` stops everything and, only
    when the stack made its own work directory, deletes it."""

    def __init__(self, workdir: Path | None = None, partitions: int = PARTITIONS,
                 lifecycle: bool = True) -> None:
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="memstream-bench-restart-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.partitions = partitions
        self.web_port = free_port()
        self.storage = DiskStorage(self.workdir / "broker", self.workdir / "object-store.log")
        self.broker = EmbeddedBroker(log_path=self.workdir / "broker.log", storage=self.storage)
        self.api_key = auth.new_key()
        self.master_key = new_key()
        self._env = {
            "MEMSTREAM_API_KEYS": json.dumps([auth.entry_for(self.api_key, "bench", "admin")
                                              .model_dump(exclude_none=True)]),
            "MEMSTREAM_MASTER_KEY": encode_key(self.master_key),
            "LIFECYCLE_ENABLED": str(lifecycle).lower()}
        self.worker: subprocess.Popen | None = None
        self.starts = 0
        # What opens the kept tables and answers the kept worker (`--keep`): synthetic data.
        (self.workdir / "master-key").write_text(encode_key(self.master_key) + "\n")
        (self.workdir / "admin-api-key").write_text(self.api_key + "\n")

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    def log_path(self, start: int | None = None) -> Path:
        return self.workdir / f"worker-{self.starts if start is None else start}.log"

    def start_broker(self) -> None:
        self.broker.start(timeout=60.0)

    def start_worker(self) -> subprocess.Popen:
        self.starts += 1
        self.worker = start_worker(self.broker.url, self.web_port, self.data_dir, APP_ID,
                                   self.partitions, self.log_path(), self._env)
        return self.worker

    def start_fresh(self) -> None:
        """The first start: the broker, its topics, the worker, until it holds every partition."""
        self.start_broker()
        asyncio.run(create_topics(self.broker.url, ALL_TOPICS, self.partitions))
        self.start_worker()
        view = Stack(self.broker.url, self.api_url, api_key=self.api_key, _workers=[self.worker])
        asyncio.run(wait_assigned(view, self.partitions))

    def stop(self, kill: bool = False, timeout: float = 120.0) -> None:
        """Stop the worker and the broker: SIGTERM to the worker, then the broker and its object
        store in turn (each waited for); with `kill`, SIGKILL to all three at once."""
        worker = self.worker
        if kill:
            for pid in self.pids().values():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        elif worker is not None and worker.poll() is None:
            worker.terminate()
        if worker is not None:
            try:
                worker.wait(timeout)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        self.worker = None
        self.broker.stop(kill=kill)  # after a SIGKILL: only reaps the broker and the store

    def pids(self) -> dict[str, int]:
        """The running processes of the stack: worker, broker, object store."""
        out = {}
        if self.worker is not None and self.worker.poll() is None:
            out["worker"] = self.worker.pid
        if self.broker.pid is not None:
            out["broker"] = self.broker.pid
        store = self.storage._proc  # noqa: SLF001 - DiskStorage names no pid
        if store is not None and store.poll() is None:
            out["object_store"] = store.pid
        return out

    def close(self) -> None:
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


# --- one timed start ----------------------------------------------------------------------------
@dataclass
class StartTimes:
    """Seconds from the start command (the object store's and the broker's start) to each point;
    None for a point not reached within the start's timeout (`not_ready` says why)."""

    broker_listening_s: float
    health_ready_s: float | None = None
    first_query_s: float | None = None
    first_query_items: int = 0
    worker_cpu_s: dict[str, float | None] = field(default_factory=dict)
    """The worker's CPU seconds (its process, all threads) at health ready and at the first
    answer: beside the wall-clock figures, how much of a start was the worker's own work."""
    load_average: float | None = None
    timeline: dict[str, float] = field(default_factory=dict)
    """The worker log's milestones, seconds from the start command (`log_timeline`)."""
    not_ready: str | None = None
    last_warning: str | None = None
    """The worker log's last WARNING or ERROR line (of a start that never got ready)."""


class NotReady(BrokerError):
    """A start whose worker did not answer in time."""


async def _until_ready(api_url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        while True:
            if proc.poll() is not None:
                raise NotReady(f"worker exited with code {proc.returncode}")
            try:
                async with session.get(api_url + "/health") as response:
                    if response.status == 200 and (await response.json()).get("ready"):
                        return
            except (aiohttp.ClientError, asyncio.TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise NotReady(f"/health not ready after {timeout:.0f} s")
            await asyncio.sleep(POLL_S)


async def first_answer(api_url: str, api_key: str, user: str, timeout: float = 600.0) -> int:
    """Ask `user`'s memory one query until it is answered (the first waits for the index); the
    number of items it answered."""
    deadline = time.monotonic() + timeout
    body = {"agent": "supervisor", "query": QUERY_TEXT, "top_k": 5, "return": "full"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout),
                                     headers={"Authorization": f"Bearer {api_key}"}) as session:
        while True:
            try:
                async with session.post(f"{api_url}/v1/users/{user}/query", json=body) as response:
                    if response.status == 200:
                        return len((await response.json())["items"])
            except (aiohttp.ClientError, asyncio.TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise NotReady(f"no query answered after {timeout:.0f} s")
            await asyncio.sleep(POLL_S)


def timed_start(stack: RestartStack, user: str, timeout: float = 600.0) -> StartTimes:
    """Start the broker and the worker again and time them (`StartTimes`); a worker that is not
    ready, or answers no query, within `timeout` seconds is reported so, not raised."""
    started_wall, started = time.time(), time.perf_counter()
    stack.start_broker()
    times = StartTimes(round(time.perf_counter() - started, 2), load_average=_load())
    proc = stack.start_worker()
    try:
        asyncio.run(_until_ready(stack.api_url, proc, timeout))
        times.health_ready_s = round(time.perf_counter() - started, 2)
        times.worker_cpu_s["at_health_ready"] = _cpu(proc.pid)
        left = max(timeout - (time.perf_counter() - started), 1.0)
        times.first_query_items = asyncio.run(first_answer(stack.api_url, stack.api_key, user, left))
        times.first_query_s = round(time.perf_counter() - started, 2)
        times.worker_cpu_s["at_first_query"] = _cpu(proc.pid)
    except NotReady as exc:
        times.not_ready = str(exc)
        times.last_warning = last_warning(stack.log_path())
    times.timeline = log_timeline(stack.log_path(), started_wall)
    return times


def _cpu(pid: int) -> float | None:
    seconds = process_cpu_seconds(pid)
    return None if seconds is None else round(seconds, 2)


# --- what a start's log says ----------------------------------------------------------------------
LOG_TIME = re.compile(r"^\[?(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})")
MILESTONES = {
    "first_log_line": re.compile(r"."),
    "faust_starting": re.compile(r"\[\^--DrainingProducer\]: Starting"),
    "partitions_assigned": re.compile(r"opening partition"),
    "embedder_ready": re.compile(r"embedder ready"),
    "index_rebuilt": re.compile(r"vector index rebuilt from the memories table"),
    "announced_ready": re.compile(r"ready: consuming chat\.turns"),
}
"""Lines of the worker log, by the name the report gives the first one's time: the first line
(the imports done), Faust's services starting, the group joined (the first table partition
opened for the assignment), the model loaded, the index rebuilt, the worker's `ready` line."""


def last_warning(path: Path) -> str | None:
    """The last WARNING or ERROR line of the worker log `path` (None: none)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    found = [line for line in lines if "[WARNING]" in line or "[ERROR]" in line]
    return found[-1][:400] if found else None


def log_timeline(path: Path, since: float) -> dict[str, float]:
    """The time of each `MILESTONES` line's first occurrence in the worker log `path`, in seconds
    after `since` (wall clock); lines are stamped by Faust's log format, `[YYYY-MM-DD hh:mm:ss,ms`
    in local time."""
    found: dict[str, float] = {}
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return found
    for line in lines:
        stamp = LOG_TIME.match(line)
        if stamp is None:
            continue
        at = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() - since
        for name, pattern in MILESTONES.items():
            if name not in found and pattern.search(line[stamp.end():]):
                found[name] = round(at, 2)
    return found


# --- checks and sizes -----------------------------------------------------------------------------
async def memory_counts(api_url: str, api_key: str, users: list[str]) -> dict[str, int]:
    """Each user's memories, every state, from the registry (`total` of a listing of none)."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120),
                                     headers={"Authorization": f"Bearer {api_key}"}) as session:
        counts = {}
        for user in users:
            async with session.get(f"{api_url}/v1/users/{user}/memories", params={"limit": 0}) as response:
                if response.status != 200:
                    raise BrokerError(f"GET memories of {user} -> {response.status}")
                counts[user] = int((await response.json())["total"])
        return counts


def disk_bytes(path: Path) -> int:
    """Bytes the files under `path` take on disk (allocated blocks, as `du` counts them)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


def expected_counts(memories: int, users: int) -> dict[str, int]:
    return {user_name(u): memories // users + (1 if u < memories % users else 0)
            for u in range(min(users, memories) if memories else users)}


# --- the run --------------------------------------------------------------------------------------
START_TIMEOUT_S = 600.0
"""How long a start may take to serve before it is reported as not ready."""


@dataclass
class Phase:
    """One restart: how the stack was stopped, the start's times, and whether every memory was
    there after it (None: the start never served)."""

    stop: str
    stop_s: float
    """How long the stop took (a clean one: the worker's shutdown, then the broker's)."""
    start: StartTimes
    memories_found: int | None
    all_there: bool


def restart_phase(stack: RestartStack, kill: bool, expected: dict[str, int], console: Console,
                  timeout: float = START_TIMEOUT_S) -> Phase:
    """Stop the stack (SIGTERM, or SIGKILL with `kill`), start it again timed, and count."""
    how = "kill -9" if kill else "SIGTERM"
    console.print(f"stopping the worker and the broker ({how}) …")
    stopping = time.perf_counter()
    stack.stop(kill=kill)
    stopped = round(time.perf_counter() - stopping, 2)
    console.print("starting both again …")
    times = timed_start(stack, next(iter(expected), user_name(0)), timeout)
    if times.not_ready is not None:
        console.print(f"  [red]not ready[/]: {times.not_ready}; the worker log's last warning: "
                      f"{times.last_warning}")
        return Phase(how, stopped, times, None, False)
    counts = asyncio.run(memory_counts(stack.api_url, stack.api_key, list(expected)))
    console.print(f"  health ready {times.health_ready_s} s, first query {times.first_query_s} s, "
                  f"{sum(counts.values()):,} memories found")
    return Phase(how, stopped, times, sum(counts.values()), counts == expected)


def run_restart_bench(memories: int, users: int, console: Console, *, base_cost: bool = True,
                      rebuild: bool = True, lifecycle: bool = True, workdir: Path | None = None,
                      start_timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
    """The figures of one run (module doc). `rebuild`: also time the index rebuild alone
    (`bench rebuild`'s); `base_cost`: also time a clean restart of a fresh stack with nothing in
    it; `workdir`: keep the stacks there (a directory per stack) rather than in a temporary
    directory deleted at the end; `start_timeout`: how long a start may take to serve."""
    users = max(1, users)
    expected = expected_counts(memories, users)
    report: dict[str, Any] = {"memories": memories, "users": users, "partitions": PARTITIONS,
                              "lifecycle": lifecycle, "load_average_start": _load()}
    stack = RestartStack(None if workdir is None else workdir / "filled", lifecycle=lifecycle)
    try:
        console.print(f"fresh stack in {stack.workdir}: broker on disk, one worker …")
        stack.start_fresh()
        if memories:
            report["fill"] = asdict(_filled(stack, memories, users, console))
        phases = [restart_phase(stack, kill, expected, console, start_timeout) for kill in (False, True)]
        report["restarts"] = {("clean" if p.stop == "SIGTERM" else "killed"): asdict(p) for p in phases}
        report["all_memories_there"] = all(p.all_there for p in phases)
        stack.stop()
        report["disk_bytes"] = {"broker_store": disk_bytes(stack.workdir / "broker"),
                                "worker_tables": disk_bytes(stack.data_dir)}
    finally:
        stack.close()
    if base_cost and memories:
        report["base_cost"] = empty_restart(console, lifecycle,
                                            None if workdir is None else workdir / "empty")
    if rebuild and memories:
        from benchmarks.bench_rebuild import run_rebuild_bench

        console.print(f"the index rebuild alone ({memories:,} memories of {users:,} users) …")
        with contextlib.redirect_stdout(sys.stderr):  # its progress bar: stdout is the report's
            alone = run_rebuild_bench(memories, users)
        report["rebuild_alone"] = {"one_go_s": alone["blocking_rebuild_s"],
                                   "sliced_s": alone["sliced_rebuild"]["seconds"],
                                   "load_average": _load()}
        report["ratio"] = ratios(report)
    report["load_average_end"] = _load()
    return report


def _filled(stack: RestartStack, memories: int, users: int, console: Console) -> FillResult:
    items = list(candidates(memories, users))
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("filling (candidates with their vectors)", total=memories)
        return asyncio.run(fill(stack.broker.url, items, stack.master_key,
                                get_settings().kafka.kafka_one_record_batches,
                                lambda n: bar.advance(task, n)))


def empty_restart(console: Console, lifecycle: bool, workdir: Path | None) -> dict[str, Any]:
    """A fresh stack with no memory, stopped cleanly and started again: the base cost of a start."""
    stack = RestartStack(workdir, lifecycle=lifecycle)
    try:
        console.print("base cost: a fresh stack with no memory, restarted …")
        stack.start_fresh()
        phase = restart_phase(stack, False, {}, console)
        return asdict(phase.start)
    finally:
        stack.close()


def ratios(report: dict[str, Any]) -> dict[str, float | None]:
    """Restart → first query over the sliced rebuild alone (what the worker does), per restart
    (None for a start that never served)."""
    alone = report["rebuild_alone"]["sliced_s"]
    out: dict[str, float | None] = {}
    for name, phase in report["restarts"].items():
        served = phase["start"]["first_query_s"]
        out[name] = round(served / alone, 2) if alone and served is not None else None
    return out


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _seconds(value: float | None, start: dict[str, Any]) -> str:
    return f"{value} s" if value is not None else f"not ready ({start['not_ready']})"


def render(report: dict[str, Any], console: Console) -> None:
    table = RichTable(title=f"restart: {report['memories']:,} memories of {report['users']:,} users")
    table.add_column("what")
    table.add_column("figure", justify="right")
    fill_ = report.get("fill")
    if fill_:
        table.add_row("fill", f"{fill_['seconds']} s, {fill_['memories_per_s']} memories/s")
    for phase in report["restarts"].values():
        start = phase["start"]
        table.add_row(f"{phase['stop']} → /health ready", _seconds(start["health_ready_s"], start))
        table.add_row(f"{phase['stop']} → first query answered", _seconds(start["first_query_s"], start))
        table.add_row(f"{phase['stop']}: every memory there", str(phase["all_there"]))
    base = report.get("base_cost")
    if base:
        table.add_row("empty stack → health ready / first query",
                      f"{base['health_ready_s']} s / {base['first_query_s']} s")
    alone = report.get("rebuild_alone")
    if alone:
        table.add_row("index rebuild alone (sliced / one go)", f"{alone['sliced_s']} s / {alone['one_go_s']} s")
        for name, ratio in report["ratio"].items():
            table.add_row(f"ratio ({name} restart → query ÷ rebuild)", f"{ratio} (goal ≤ 2)")
    disk = report.get("disk_bytes")
    if disk:
        table.add_row("disk: broker store / worker tables",
                      f"{disk['broker_store'] / 1e6:,.1f} MB / {disk['worker_tables'] / 1e6:,.1f} MB")
    table.add_row("load average (start → end)", f"{report['load_average_start']} → {report['load_average_end']}")
    console.print(table)
