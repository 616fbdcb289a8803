"""The commands a user types: `memstream run`, `send`, `query`, `replay`, `bench`."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from streams.tools.stack import wait_ready
from streams.tools.broker import free_port
from tests.integration.conftest import ADMIN_KEY

pytestmark = pytest.mark.integration
ROOT = Path(__file__).parents[2]
TINY = ROOT / "tests" / "data" / "locomo_tiny.json"


def memstream(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streams", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_run_starts_broker_and_worker_quietly_send_query_work_and_stop_stops_everything(tmp_path):
    import asyncio

    broker_port, web_port = free_port(), free_port()
    env = dict(os.environ, EMBEDDED_BROKER_PORT=str(broker_port), WEB_PORT=str(web_port),
               DATA_DIR=str(tmp_path / "data"), TABLE_STORE="rocksdb://", APP_ID="memstream-run")
    env.pop("KAFKA_BROKER_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "streams", "run"], env=env, cwd=ROOT,
                            stdout=open(tmp_path / "run.log", "wb"), stderr=subprocess.STDOUT)
    try:
        asyncio.run(wait_ready(f"http://127.0.0.1:{web_port}", proc, timeout=180))
        assert port_open(broker_port), "run started the embedded broker"
        sent = memstream("send", "--user", "cli-ana", "--speaker", "Ana", "--turn-id", "1",
                         "--json", "I adopted a dog named Luna last year.", env=env)
        assert sent.returncode == 0, sent.stderr
        assert json.loads(sent.stdout)["topic"] == "chat.turns"

        # Wait for the memory through the stream, then query it through the CLI.
        from streams.tools.client import read_topic
        from topics.events_wire import events_of

        async def created() -> dict:
            async for _k, value in read_topic(f"127.0.0.1:{broker_port}", "memory.events"):
                for event in events_of(value):
                    if event.user_id == "cli-ana" and event.kind == "created":
                        return event.model_dump(mode="json")
            raise AssertionError("unreachable")

        event = asyncio.run(asyncio.wait_for(created(), 120))
        result = memstream("query", "--user", "cli-ana", "--json", "Which pet?", env=env)
        assert result.returncode == 0, result.stderr
        items = json.loads(result.stdout)
        assert items[0]["id"] == event["memory_id"]
        assert items[0]["source_turn_ids"] == ["main:1"]
        assert {"id", "summary", "type", "category", "state", "score", "source_turn_ids"} <= set(items[0])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(180)  # a clean stop closes RocksDB (~15 s idle): a guard, not a measure
    assert not port_open(broker_port), "stopping `run` stops the broker it started"
    assert not port_open(web_port)
    # A quiet start (issue 50 item 6): the broker, the API, the key, the model and `ready`, not
    # Faust's ~90 notes of its services starting and its tables opening partitions.
    before_ready = lines_before_ready((tmp_path / "run.log").read_text())
    assert len(before_ready) <= QUIET_START_LINES, "\n".join(before_ready)
    assert not [line for line in before_ready if "Starting..." in line or "opening partition" in line]


QUIET_START_LINES = 15
"""The most lines `memstream run` prints up to and with its `ready` line (README: "a dozen")."""


def lines_before_ready(log: str) -> list[str]:
    """The lines of a run's output up to and with the worker's `ready: ...` line (which must be
    there: the run served a query)."""
    lines = log.splitlines()
    ready = next(i for i, line in enumerate(lines) if "ready: consuming" in line)
    return lines[:ready + 1]


def test_help_explains_every_command():
    out = memstream("--help").stdout
    for command in ("run", "worker", "broker", "send", "replay", "watch", "query", "bench"):
        assert command in out
    assert "locomo" in memstream("bench", "--help").stdout


def test_bad_input_on_the_cli_is_a_clear_error():
    result = memstream("send", "--user", "a b", "hello")
    assert result.returncode == 2 and "invalid turn" in result.stderr


def test_replay_and_bench_on_a_locomo_file_never_seen(worker, tmp_path):
    env = dict(os.environ, KAFKA_BROKER_URL=worker.broker_url, MEMSTREAM_API_KEY=ADMIN_KEY)
    copy = tmp_path / "someone-else.json"
    copy.write_text(TINY.read_text())
    replayed = memstream("replay", str(copy), "--user-prefix", "cli-", env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert "replayed 6 turns" in replayed.stderr

    result = memstream("bench", "locomo", str(copy), "--json", "--broker", worker.broker_url,
                       "--api", worker.api_url, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for key in ("turns", "memories_written", "ingest_turns_per_s", "broker_raw_msgs_per_s",
                "e2e_latency_ms", "query_latency_ms", "recall_any", "recall_all",
                "context_words_mean", "baseline_raw_turns"):
        assert key in report
    assert report["turns"] == 6
    assert set(report["e2e_latency_ms"]) == {"p50", "p95", "p99"}
    assert set(report["recall_any"]) == {"5", "10", "20"}
    assert set(report["baseline_raw_turns"]["recall_all"]) == {"5", "10", "20"}
    assert report["memories_written"] > 0
    assert 0.0 < report["writing_pass_rate"] <= 1.0
    assert report["precision_against_gold"] is None  # the tiny file carries no gold observations
    # Against a running stack: the broker's records of the drain (any writer's) and the one worker.
    assert report["kafka_msgs_per_turn"]["by_topic"]["chat.turns"] >= 1.0
    assert report["kafka_bytes_per_turn"]["total"] > 0
    assert "model_ms_per_turn" in report["cpu"] and "rest_ms_per_turn" in report["cpu"]
    assert "stages_ms_per_turn" in report["cpu"]  # None here: this worker's metrics are not read
    [only] = report["scale_out"]["per_worker"]
    assert only["api_url"] == worker.api_url and only["partitions"] and only["cpu_seconds"] is None


def test_watch_prints_a_users_events_live(worker):
    """With --user, from the API's event stream (memstream's client), opened by the worker."""
    import asyncio

    from tests.integration.conftest import make_turn, produce, unique_user

    user = unique_user("watch")
    env = dict(os.environ, KAFKA_BROKER_URL=worker.broker_url, MEMSTREAM_API_KEY=ADMIN_KEY)
    proc = subprocess.Popen([sys.executable, "-m", "streams", "watch", "--json", "--from-beginning",
                             "--user", user, "--api", worker.api_url], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        asyncio.run(produce(worker.broker_url, [make_turn(user, "1", "I adopted a dog named Luna.")]))
        import select

        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "watch printed nothing within 120 s"
        line = proc.stdout.readline()
        event = json.loads(line)
        assert event["user_id"] == user and event["kind"] in ("candidate", "created")
        assert "Luna" in event["summary"]
    finally:
        proc.kill()
        proc.wait()
