"""A local memstream stack over TCP: the embedded broker with the topics and `memstream worker`
child processes, waited on until they are ready and hold their partitions.

One module for what the integration tests (tests/integration/conftest.py and the files beside
it) and the broker benches (benchmarks/bench.py) both start, so the tests need no bench code to
start a stack. It lives beside the embedded broker it starts (streams/tools/broker.py) rather
than in benchmarks/: it uses only the service's own modules, and the benches, not the service,
are what the wheel leaves out.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from streams.api import auth
from streams.client.progress import Completion, TurnKey  # noqa: F401 - re-exported: the tests and benches import them from here
from streams.settings import get_settings
from streams.app.topic_admin import create_topics
from streams.app.topology import ALL_TOPICS
from streams.errors import BrokerError
from streams.privacy.crypto import decode_key, encode_key, new_key
from streams.tools.cpu_profile import profile_file
from streams.tools.broker import DiskStorage, EmbeddedBroker, free_port
from topics.names import CHAT_TURNS

BENCH_APP_ID = "memstream-bench"


@dataclass
class Stack:
    """A broker and its workers (a bench runs against them, the integration tests start them);
    `close()` stops what was started here."""

    broker_url: str
    api_url: str
    one_record_batches: bool = field(
        default_factory=lambda: get_settings().kafka.kafka_one_record_batches)
    """Whether the bench's producers send one record per batch (KAFKA_ONE_RECORD_BATCHES: only
    for a broker whose ListOffsets is wrong after multi-record batches and not corrected)."""
    api_key: str | None = None  # None: the client's default (MEMSTREAM_API_KEY)
    master_key: bytes | None = None  # opens the run's events (None: the settings' one)
    app_id: str | None = None  # the worker's APP_ID (None: any app on the broker)
    api_urls: list[str] = field(default_factory=list)
    """Every worker's URL, `api_url` (the first's) included; empty: `api_url` alone."""
    _broker: EmbeddedBroker | None = None
    _workers: list[subprocess.Popen] = field(default_factory=list)
    _workdir: Path | None = None

    @property
    def urls(self) -> list[str]:
        """The workers' URLs (the one `api_url` of a stack not started here)."""
        return self.api_urls or [self.api_url]

    def close(self) -> None:
        running = [w for w in self._workers if w.poll() is None]
        for worker in running:  # all at once: the last ones need not rebalance in turn
            worker.terminate()
        for worker in running:
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        if self._broker is not None:
            self._broker.stop()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)


def start_worker(broker_url: str, web_port: int, data_dir: Path, app_id: str, partitions: int,
                 log_path: Path, extra_env: dict[str, str] | None = None,
                 cpu_profile: Path | None = None) -> subprocess.Popen:
    """Start `memstream worker` as a child process (it dies with its parent). It keeps its ONNX
    model files where this process does (not in its fresh DATA_DIR, which would export the model
    again at every start). `cpu_profile`: run it under `streams.tools.cpu_profile`, writing
    there."""
    from streams.app.services import models_dir
    from streams.tools.broker import _die_with_parent

    env = dict(os.environ, KAFKA_BROKER_URL=broker_url, WEB_PORT=str(web_port),
               EMBEDDER_CACHE_DIR=os.environ.get("EMBEDDER_CACHE_DIR",
                                                 str(models_dir(get_settings()).resolve())),
               DATA_DIR=str(data_dir), APP_ID=app_id, TOPIC_PARTITIONS=str(partitions),
               WEB_HOST="127.0.0.1", TABLE_STORE="rocksdb://", **(extra_env or {}))
    command = (["-m", "streams", "worker"] if cpu_profile is None
               else ["-m", "streams.tools.cpu_profile", str(cpu_profile), "streams", "worker"])
    return subprocess.Popen(
        [sys.executable, *command], env=env, stdout=open(log_path, "ab"),
        stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
    )


async def wait_ready(api_url: str, proc: subprocess.Popen | None, timeout: float = 180.0) -> None:
    """Wait until the worker's /health says ready (its tables recovered, partitions assigned)."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise BrokerError(f"worker exited with code {proc.returncode}")
            try:
                async with session.get(api_url + "/health") as response:
                    if response.status == 200 and (await response.json()).get("ready"):
                        return
            except (aiohttp.ClientError, asyncio.TimeoutError):
                pass
            await asyncio.sleep(0.25)
    raise BrokerError(f"worker at {api_url} not ready after {timeout:.0f}s")


async def wait_assigned(stack: Stack, partitions: int, timeout: float = 300.0) -> None:
    """Wait until every worker of `stack` is ready and the `chat.turns` partitions are shared
    out among them, each held by one (`settled`): no rebalance is due any more."""
    procs = stack._workers or [None] * len(stack.urls)
    deadline = time.monotonic() + timeout
    for url, proc in zip(stack.urls, procs):
        await wait_ready(url, proc, timeout)
    while True:
        statuses = [await worker_status(url, stack.api_key) for url in stack.urls]
        assigned = [turn_partitions(health, CHAT_TURNS) for health, _ in statuses]
        if settled(assigned, partitions) and all((h or {}).get("ready") for h, _ in statuses):
            return
        for proc in procs:
            if proc is not None and proc.poll() is not None:
                raise BrokerError(f"worker exited with code {proc.returncode}")
        if time.monotonic() > deadline:
            raise BrokerError(f"the workers' partitions never settled: {assigned}")
        await asyncio.sleep(0.25)


def start_stack(partitions: int, lifecycle: bool = True, workers: int = 1,
                profile_dir: Path | None = None, broker_storage: str = "disk") -> Stack:
    """A fresh embedded broker with the topics, and `workers` workers in one consumer group
    (one APP_ID; each its own WEB_PORT and DATA_DIR), returned once the partitions are
    shared out among them all. `profile_dir`: each worker runs under
    `streams.tools.cpu_profile`, writing `worker.prof` (`worker-i.prof`) there.
    `broker_storage`: "disk" (what `memstream run` uses: the broker's object store in the
    work directory) or "memory" (Tansu's own, lost when it stops)."""
    workdir = Path(tempfile.mkdtemp(prefix="memstream-bench-"))
    storage = DiskStorage(workdir / "broker", workdir / "object-store.log") if broker_storage == "disk" else None
    broker = EmbeddedBroker(log_path=workdir / "broker.log", storage=storage).start()
    stack = Stack(broker.url, "", _broker=broker, _workdir=workdir)
    try:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, partitions))
        key = auth.new_key()  # the fresh workers accept this admin key only
        keys = json.dumps([auth.entry_for(key, "bench", "admin").model_dump(exclude_none=True)])
        master = encode_key(new_key())  # the fresh workers' master key (tables die with the run)
        stack.api_key, stack.master_key, stack.app_id = key, decode_key(master), BENCH_APP_ID
        for i in range(max(workers, 1)):
            port = free_port()
            suffix = "" if workers <= 1 else f"-{i}"
            stack._workers.append(start_worker(
                broker.url, port, workdir / f"data{suffix}", BENCH_APP_ID, partitions,
                workdir / f"worker{suffix}.log",
                {"MEMSTREAM_API_KEYS": keys, "MEMSTREAM_MASTER_KEY": master,
                 "LIFECYCLE_ENABLED": str(lifecycle).lower()},
                None if profile_dir is None else profile_file(profile_dir, i, workers)))
            stack.api_urls.append(f"http://127.0.0.1:{port}")
        stack.api_url = stack.api_urls[0]
        asyncio.run(wait_assigned(stack, partitions))
    except BaseException:
        stack.close()
        raise
    return stack


# --- a worker's health ----------------------------------------------------------------------------
async def worker_status(api_url: str, api_key: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """A worker's /health body and /metrics text (None for one that did not answer)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    health = metrics = None
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        try:
            async with session.get(api_url + "/health") as response:
                health = await response.json()
            async with session.get(api_url + "/metrics", headers=headers) as response:
                if response.status == 200:
                    metrics = await response.text()
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            pass
    return health, metrics


def turn_partitions(health: Mapping[str, Any] | None, topic: str) -> list[int]:
    """The partitions of `topic` a worker's /health says it holds."""
    return list(((health or {}).get("assigned") or {}).get(topic) or [])


def settled(assigned: Sequence[Sequence[int]], partitions: int) -> bool:
    """Whether the workers' partitions are one settled assignment: every partition held by
    exactly one worker, and as many workers hold some as there are partitions to go round."""
    held = [p for a in assigned for p in a]
    busy = sum(1 for a in assigned if a)
    return (sorted(held) == list(range(partitions))
            and busy == min(len(assigned), partitions))
