"""A real Prometheus scrapes a worker through a replay: every dashboard query has data and every
alert rule fires on its condition (issue 23).

Prometheus (Debian's `prometheus`, deploy/apt-packages.txt) scrapes one worker every second with a
`metrics` key and evaluates a copy of deploy/alerts.yml with `for: 0s` and the thresholds of
TEST_THRESHOLDS. The worker runs with the optional providers on, pointed where they fail: an LLM
(a local fake of the Messages API that answers 500 after half a second, later never) and an
OpenSearch sink on a port that refuses connections. A conversation is replayed in two halves (the
second moves every counter the first created after Prometheus has seen it, so each rate is > 0
whatever the scrape timing), with a malformed record in each. Then:

- every PromQL expression of every panel of grafana/dashboards/*.json is evaluated through the
  HTTP API and returns a number, or is listed in EMPTY_AFTER_REPLAY with why;
- each alert is read firing from /api/v1/alerts once its condition is provoked, or is listed in
  NOT_PROVOKED with why: dead letters, a slow stage and a failing sink by the replay; a growing
  backlog and a stalled pipeline by a flood of turns while the LLM never answers; a worker down by
  killing it.
"""
from __future__ import annotations

import asyncio
import json
import math
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiokafka import AIOKafkaProducer

from streams.api import auth
from streams.tools.locomo import load_conversation
from streams.tools.broker import EmbeddedBroker, free_port
from streams.app.topic_admin import create_topics
from tests.integration.conftest import (
    ADMIN_KEY,
    PARTITIONS,
    Worker,
    make_turn,
    produce,
    query,
    unique_user,
    wait_processed,
)
from streams.app.topology import ALL_TOPICS
from topics.names import CHAT_TURNS
from topics.turns import Role, Turn

ROOT = Path(__file__).parents[2]
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
ALERTS = ROOT / "deploy" / "alerts.yml"
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")

pytestmark = pytest.mark.integration
needs_prometheus = pytest.mark.skipif(
    PROMETHEUS is None, reason="no `prometheus` binary on PATH (Debian package prometheus, listed "
    "in deploy/apt-packages.txt; ./dev test installs it)")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="no `promtool` binary on PATH (Debian package prometheus)")

EMPTY_AFTER_REPLAY: dict[str, str] = {
    # "<dashboard> / <panel title> / <refId>": why its query has no data after the replay.
}
"""The only panel queries allowed to return nothing: a new panel must have data or a reason here."""

TEST_THRESHOLDS: dict[str, list[tuple[str, str]]] = {
    # The flood leaves a backlog of a few hundred records, not a thousand.
    "MemstreamConsumerLagGrowing": [("> 1000", "> 0")],
    # Ten minutes without a record taken would outlast the test: fifteen seconds here.
    "MemstreamPipelineStalled": [("[10m]", "[15s]")],
    # Two malformed records, not three a minute.
    "MemstreamDeadLetters": [("> 0.05", "> 0")],
    # Each LLM call of the fake takes 0.5 s, so ingest spends > 0.25 s on a turn (not 1 s).
    "MemstreamStageLatencyHigh": [("> 1", "> 0.25")],
}
"""What the test copy of deploy/alerts.yml changes in each rule's expression (besides `for: 0s`)."""

NOT_PROVOKED: dict[str, str] = {
    "MemstreamStageStalled": "a stage stalls only on a bug that fails every retry; a worker "
    "process has none to inject (tests/unit/pipeline/test_retries.py stalls the stages in process "
    "and reads the gauge and /health).",
    "MemstreamWorkerNotServing": "a worker consumes no partition only while its table recovery "
    "hangs or when workers outnumber partitions: neither is cheap to make here (one worker; a "
    "second costs a model load).",
    "MemstreamDeadLettersNotSent": "a dead letter fails only when the broker refuses the "
    "dead-letter topic while it takes the input; the embedded broker cannot be made to.",
}
"""Alerts the test does not provoke, with why: they must still load and evaluate without error."""

LLM_DELAY_S = 0.5
FLOOD_TURNS = 300
WAIT_S = 240
"""Longest wait for Prometheus to see a condition: a guard against a hang, never a measure."""


# --- the fake LLM and a port that refuses connections -------------------------------------------

class FakeLLM:
    """An Anthropic Messages API that answers 500 after LLM_DELAY_S; after `hang()`, never (until
    `close()`). The worker falls back to its rules either way."""

    def __init__(self) -> None:
        self.hanging = False
        self.released = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fake.released.wait(None if fake.hanging else LLM_DELAY_S)
                body = b'{"type": "error", "error": {"type": "api_error", "message": "fake"}}'
                try:
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the worker gave up on the call (its budget) or was killed

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hang(self) -> None:
        self.hanging = True

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def refused_port() -> Iterator[int]:
    """A port bound and never listened on: a connection to it is refused, and nothing takes it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


# --- Prometheus --------------------------------------------------------------------------------

def rules_for_the_test(rules: dict) -> dict:
    """A copy of deploy/alerts.yml with `for: 0s` and TEST_THRESHOLDS applied."""
    copy = json.loads(json.dumps(rules))
    for rule in copy["groups"][0]["rules"]:
        rule["for"] = "0s"
        for shipped, lowered in TEST_THRESHOLDS.get(rule["alert"], []):
            assert rule["expr"].count(shipped) == 1, f"{rule['alert']}: {shipped!r} not once"
            rule["expr"] = rule["expr"].replace(shipped, lowered)
    return copy


def shipped_rules() -> dict:
    return yaml.safe_load(ALERTS.read_text())


@contextmanager
def running_prometheus(workdir: Path, target: str, key: str) -> Iterator[str]:
    """Prometheus on a free port with its own storage, scraping `target` every second with `key`
    and evaluating the test copy of the alert rules every second; yields its URL."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "alerts.yml").write_text(yaml.safe_dump(rules_for_the_test(shipped_rules())))
    (workdir / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": ["alerts.yml"],
        "scrape_configs": [{
            "job_name": "memstream",
            "authorization": {"type": "Bearer", "credentials": key},
            "static_configs": [{"targets": [target]}],
        }],
    }))
    port = free_port()
    assert PROMETHEUS is not None
    with open(workdir / "prometheus.log", "ab") as log:
        proc = subprocess.Popen([PROMETHEUS, f"--config.file={workdir / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={workdir / 'data'}",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: proc.poll() is None and _scraped_up(url), "Prometheus scraping the worker",
              lambda: (workdir / "prometheus.log").read_text()[-3000:])
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def api(url: str, path: str, **params: str) -> Any:
    """The `data` of a Prometheus HTTP API answer."""
    query_string = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"{url}{path}{query_string}", timeout=30) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def instant(url: str, expr: str) -> list[dict]:
    """The series of an instant query."""
    return api(url, "/api/v1/query", query=expr)["result"]


def has_data(result: list[dict]) -> bool:
    """Some series with a number (histogram_quantile over no observations gives NaN: no data)."""
    return any(not math.isnan(float(series["value"][1])) for series in result)


def _scraped_up(url: str) -> bool:
    try:
        return any(s["value"][1] == "1" for s in instant(url, 'up{job="memstream"}'))
    except OSError:
        return False  # not listening yet


def firing(url: str) -> set[str]:
    return {a["labels"]["alertname"] for a in api(url, "/api/v1/alerts")["alerts"]
            if a["state"] == "firing"}


def until(check: Callable[[], Any], what: str, explain: Callable[[], Any] = lambda: "") -> Any:
    """Poll `check` until it is truthy; fail after WAIT_S saying `what` did not happen."""
    deadline = time.monotonic() + WAIT_S
    while not (result := check()):
        assert time.monotonic() < deadline, f"no {what} after {WAIT_S}s: {explain()}"
        time.sleep(0.5)  # Prometheus evaluates every second: there is no event to await
    return result


# --- the panels ----------------------------------------------------------------------------------

def panel_queries() -> dict[str, str]:
    """Every panel target's expression, by "<dashboard> / <panel title> / <refId>"."""
    queries: dict[str, str] = {}
    for path in DASHBOARDS:
        panels = list(json.loads(path.read_text()).get("panels", []))
        while panels:
            panel = panels.pop(0)
            panels.extend(panel.get("panels", []))
            for target in panel.get("targets", []):
                name = f"{path.stem} / {panel.get('title')} / {target.get('refId')}"
                queries[name] = target["expr"]
    return queries


# --- the stack and the replay --------------------------------------------------------------------

@dataclass
class Stack:
    broker_url: str
    worker: Worker
    llm: FakeLLM
    prometheus: str
    user: str


METRICS_KEY = auth.new_key()
KEYS = json.dumps([e.model_dump(exclude_none=True) for e in (
    auth.entry_for(ADMIN_KEY, "it-admin", "admin"),
    auth.entry_for(METRICS_KEY, "prometheus", "metrics"),
)])


def worker_env(llm_url: str, opensearch_port: int) -> dict[str, str]:
    budget = "600000"  # the LLM budgets outlast the test: a call that hangs blocks its stage
    return {
        "MEMSTREAM_API_KEYS": KEYS,
        "LLM_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": "fake", "ANTHROPIC_BASE_URL": llm_url,
        # The model on ingest's path, asked a turn at a time: the slow-stage and backlog alerts
        # are provoked through it (deferred, the default, asks it a window of turns later).
        "LLM_EXTRACTION": "inline",
        "LLM_MAX_RETRIES": "0", "TRIGGER_BUDGET_MS": budget, "LLM_EXTRACT_BUDGET_MS": budget,
        "LLM_SAME_FACT_BUDGET_MS": budget, "LLM_LIFECYCLE_BUDGET_MS": budget,
        "OPENSEARCH_URL": f"http://127.0.0.1:{opensearch_port}", "SINK_RETRY_ATTEMPTS": "2",
        "SINK_RETRY_INITIAL_MS": "1", "SINK_RETRY_MAX_MS": "10", "SINK_BATCH_MAX_AGE_MS": "50",
        "METRICS_LAG_INTERVAL_SECONDS": "1",
        # Faust's fetch sizes (read from the environment): a stuck stage then leaves a backlog of
        # the flood's hundreds of records, not only past the default 4096-record stream buffer.
        "STREAM_BUFFER_MAXSIZE": "16", "BROKER_MAX_POLL_RECORDS": "16",
    }


def halves(user: str) -> tuple[list[Turn], list[Turn]]:
    """tests/data/locomo_tiny.json's two sessions as `user`, each with a few more turns: a fact,
    then a repeat (dedup) and a decision said by the assistant (an episode)."""
    tiny = [t.model_copy(update={"user_id": user})
            for t in load_conversation(ROOT / "tests" / "data" / "locomo_tiny.json").turns]
    first = [t for t in tiny if t.thread_id == "session_9"]
    second = [t for t in tiny if t.thread_id == "session_10"]
    later = lambda turns, n: (turns[-1].ts + timedelta(minutes=n)).isoformat()  # noqa: E731
    first.append(make_turn(user, "x1", "I work as a nurse at the Mercy hospital in Boston.",
                           thread="session_9", ts=later(first, 1)))
    second.append(make_turn(user, "x2", "I started pottery classes last week.",
                            thread="session_10", ts=later(second, 1)))
    decision = make_turn(user, "x3", "Great, we decided to book the vet visit for Max on Friday; "
                         "next step is the reminder.", thread="session_10", speaker="Ava",
                         ts=later(second, 2))
    second.append(decision.model_copy(update={"role": Role.assistant}))
    return first, second


async def produce_malformed(broker_url: str, user: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=broker_url)
    await producer.start()
    try:
        await producer.send_and_wait(CHAT_TURNS, b'{"user_id": "not json', key=user.encode())
    finally:
        await producer.stop()


def replay(stack: Stack, turns: list[Turn]) -> None:
    """A malformed record then `turns`, all on the user's partition: once the turns are processed,
    so is the malformed record."""
    asyncio.run(produce_malformed(stack.broker_url, stack.user))
    asyncio.run(produce(stack.broker_url, turns))
    asyncio.run(wait_processed(stack.broker_url, turns))


def seen_first_half(url: str, done: float) -> bool:
    """Prometheus scraped the worker after the first half was processed, and has seen the sink's
    dead letters (the sink runs behind the stages)."""
    return (any(float(s["value"][1]) > done for s in instant(url, 'timestamp(up{job="memstream"})'))
            and bool(instant(url, "memstream_sink_dead_letters_total")))


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    """A fresh broker and worker (its own: a replay on the session's broker would reprocess the
    other tests' records), the fake LLM, Prometheus, and the replay done."""
    workdir = tmp_path_factory.mktemp("prometheus")
    broker = EmbeddedBroker(log_path=workdir / "broker.log").start()
    llm = FakeLLM()
    try:
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS))
        with refused_port() as opensearch_port:
            worker = Worker(broker.url, workdir / "data", "memstream-prom", workdir / "worker.log",
                            env=worker_env(llm.url, opensearch_port)).start()
            try:
                with running_prometheus(workdir / "prom", f"127.0.0.1:{worker.port}",
                                        METRICS_KEY) as prometheus:
                    s = Stack(broker.url, worker, llm, prometheus, unique_user("prom"))
                    first, second = halves(s.user)
                    replay(s, first)
                    done = time.time()
                    until(lambda: seen_first_half(prometheus, done), "scrape of the first half")
                    replay(s, second)
                    for question in ("What class did Ana start?", "What is Ana's new pet?"):
                        asyncio.run(query(worker.api_url, s.user, question))
                    yield s
            finally:
                worker.kill()  # a throwaway worker: a clean stop only spends time closing RocksDB
    finally:
        llm.close()
        broker.stop()


# --- the tests -----------------------------------------------------------------------------------

@needs_promtool
def test_promtool_accepts_the_rules_and_the_config_that_loads_them(tmp_path: Path):
    checked = subprocess.run([PROMTOOL, "check", "rules", str(ALERTS)], capture_output=True,
                             text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # deploy/prometheus.yml beside alerts.yml, as Prometheus finds them, with its key file present.
    config = (ROOT / "deploy" / "prometheus.yml").read_text()
    assert "job_name: memstream" in config, 'the rules select up{job="memstream"}'
    (tmp_path / "metrics_api_key").write_text("key")
    (tmp_path / "prometheus.yml").write_text(
        config.replace("/run/secrets/metrics_api_key", str(tmp_path / "metrics_api_key")))
    shutil.copy(ALERTS, tmp_path / "alerts.yml")
    checked = subprocess.run([PROMTOOL, "check", "config", str(tmp_path / "prometheus.yml")],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 9 rules found" in checked.stdout + checked.stderr


def test_the_lists_name_only_what_exists():
    rules = {r["alert"] for r in shipped_rules()["groups"][0]["rules"]}
    assert set(TEST_THRESHOLDS) <= rules and set(NOT_PROVOKED) <= rules
    assert set(EMPTY_AFTER_REPLAY) <= set(panel_queries())


@needs_prometheus
def test_every_panel_query_returns_data_after_a_replay(stack: Stack):
    queries = panel_queries()
    assert len(queries) >= 50, "the dashboards lost their panels?"

    def empty() -> list[str]:
        return [name for name, expr in queries.items()
                if name not in EMPTY_AFTER_REPLAY and not has_data(instant(stack.prometheus, expr))]

    # The last events of the replay (the sink's dead letters, the queries) reach Prometheus at its
    # next scrapes: wait for them, then name every query still without data.
    deadline = time.monotonic() + WAIT_S
    while (missing := empty()) and time.monotonic() < deadline:
        time.sleep(1)  # Prometheus scrapes every second: there is no event to await
    assert not missing, "panel queries without data (give them data, or a reason in " \
        "EMPTY_AFTER_REPLAY):\n" + "\n".join(f"{n}: {queries[n]}" for n in missing)
    now_with_data = [n for n in EMPTY_AFTER_REPLAY
                     if has_data(instant(stack.prometheus, queries[n]))]
    assert not now_with_data, f"listed as empty but have data (drop them): {now_with_data}"


@needs_prometheus
def test_every_alert_fires_on_its_condition(stack: Stack):
    prometheus = stack.prometheus
    loaded = {r["name"] for r in api(prometheus, "/api/v1/rules")["groups"][0]["rules"]}
    assert loaded == {r["alert"] for r in shipped_rules()["groups"][0]["rules"]}
    fired: set[str] = set()

    def fire(expected: set[str], what: str) -> None:
        until(lambda: expected <= firing(prometheus), f"{sorted(expected)} firing {what}",
              lambda: f"firing: {sorted(firing(prometheus))}")
        fired.update(expected)

    # The replay: two malformed records, an LLM that takes 0.5 s a call, a sink that is refused.
    fire({"MemstreamDeadLetters", "MemstreamStageLatencyHigh", "MemstreamSinkFailing"},
         "after the replay")

    # A flood of turns while the LLM never answers: ingest hangs on the first, the rest wait.
    backlog = {"MemstreamConsumerLagGrowing", "MemstreamPipelineStalled"}
    until(lambda: not backlog & firing(prometheus), f"{sorted(backlog)} quiet before the flood")
    stack.llm.hang()
    flooder = unique_user("flood")
    asyncio.run(produce(stack.broker_url, [
        make_turn(flooder, str(i), f"I had a cup of tea number {i} this morning.",
                  ts=f"2024-05-01T10:{i // 60:02d}:{i % 60:02d}+00:00")
        for i in range(FLOOD_TURNS)]))
    fire(backlog, "with the backlog")

    # The worker killed: its scrapes fail.
    stack.worker.kill()
    fire({"MemstreamWorkerDown"}, "with the worker killed")

    # The rules not provoked were evaluated all along, without an error, like the others.
    rules = api(prometheus, "/api/v1/rules")["groups"][0]["rules"]
    assert [(r["name"], r["lastError"]) for r in rules if r["health"] != "ok"] == []
    assert fired | set(NOT_PROVOKED) == loaded
