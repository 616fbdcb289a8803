"""Nothing lost across a restart: `memstream run` as a user runs it, killed with its whole
process group (`kill -9`: the worker, the broker and the broker's object store at once), then
started again on the same DATA_DIR.

After the restart the same query gives the same answer, the SSE replay still holds the events,
a command's idempotent outcome is still answered (and not applied again), and re-sending the
turn makes no duplicate memory.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streams.tools.broker import free_port
from streams.tools.stack import wait_ready
from tests.integration.conftest import call
from tests.integration.test_cli import ROOT, memstream
from tests.integration.test_sse import events

pytestmark = pytest.mark.integration
USER = "zoe"


class RunCommand:
    """`memstream run` in a process group of its own, on one DATA_DIR and fixed ports."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.broker_port, self.web_port = free_port(), free_port()
        self.env = dict(os.environ, EMBEDDED_BROKER_PORT=str(self.broker_port), WEB_PORT=str(self.web_port),
                        DATA_DIR=str(tmp_path / "data"), TABLE_STORE="rocksdb://", APP_ID="memstream-restart")
        self.env.pop("KAFKA_BROKER_URL", None)
        self.env.pop("API_KEYS", None)
        self.proc: subprocess.Popen | None = None
        self.runs = 0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def admin_key(self) -> str:
        return (self.tmp_path / "data" / "admin-api-key").read_text().strip()

    def start(self) -> "RunCommand":
        self.runs += 1
        self.proc = subprocess.Popen([sys.executable, "-m", "streams", "run"], env=self.env, cwd=ROOT,
                                     stdout=open(self.tmp_path / f"run{self.runs}.log", "wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        asyncio.run(wait_ready(self.api_url, self.proc, timeout=300))
        return self

    def kill_group(self) -> None:
        """SIGKILL to every process of the group: nothing gets to close or flush anything."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(180)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)

    def call(self, method: str, path: str, body: Any = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        return asyncio.run(call(self.api_url, method, path, body, key=self.admin_key, headers=headers))


def send(run: RunCommand, turn_id: str, text: str) -> None:
    sent = memstream("send", "--user", USER, "--speaker", "Zoe", "--turn-id", turn_id,
                     "--ts", "2026-11-30T09:00:00+00:00", "--json", text, env=run.env)
    assert sent.returncode == 0, sent.stderr


def active_memories(run: RunCommand) -> list[dict]:
    status, body = run.call("GET", f"/v1/users/{USER}/memories?state=active&limit=100")
    assert status == 200, body
    return sorted(body["items"], key=lambda m: m["id"])


def wait_memories(run: RunCommand, turns: set[str]) -> list[dict]:
    """The active memories once every turn of `turns` is the source of one (polled: the
    registry is the thing under test)."""
    async def until() -> list[dict]:
        while True:
            items = await asyncio.to_thread(active_memories, run)
            if turns <= {ref.split(":")[-1] for m in items for ref in m["source_turn_ids"]}:
                return items
            await asyncio.sleep(0.2)

    return asyncio.run(asyncio.wait_for(until(), 180))


def identities(items: list[dict]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(m["id"], m["summary"], tuple(m["source_turn_ids"])) for m in items]


def replayed_event_ids(run: RunCommand, count: int) -> list[str]:
    """The ids of the first `count` events the user's SSE buffer replays from the start."""
    async def read() -> list[str]:
        async with events(run.api_url, USER, key=run.admin_key, last_event_id="from-the-start") as stream:
            assert (await stream.next())["event"] == "reset"
            return [(await stream.next())["id"] for _ in range(count)]

    return asyncio.run(asyncio.wait_for(read(), 120))


def query(run: RunCommand) -> list[tuple[str, str]]:
    result = memstream("query", "--user", USER, "--json", "Where does Zoe work?", env=run.env)
    assert result.returncode == 0, result.stderr
    return [(item["id"], item["summary"]) for item in json.loads(result.stdout)]


def test_run_keeps_memories_events_and_outcomes_across_a_kill_of_the_whole_group(tmp_path):
    run = RunCommand(tmp_path).start()
    try:
        send(run, "1", "I work as a nurse at the hospital in Boston.")
        send(run, "2", "My brother Tom lives in Ohio.")
        before = wait_memories(run, {"1", "2"})
        answer = query(run)
        assert answer and "nurse" in answer[0][1]
        pinned = before[0]["id"]
        headers = {"Idempotency-Key": "pin-once"}
        status, outcome = run.call("POST", f"/v1/users/{USER}/memories/{pinned}/pin?wait=true", headers=headers)
        assert status == 200 and outcome["commands"][0]["status"] == "applied", outcome
        event_ids = replayed_event_ids(run, 3)

        run.kill_group()
        run.start()

        assert identities(active_memories(run)) == identities(before), "every memory is still there"
        assert query(run) == answer, "the same query gives the same answer after the restart"
        assert replayed_event_ids(run, 3) == event_ids, "the SSE replay survives the restart"
        status, again = run.call("POST", f"/v1/users/{USER}/memories/{pinned}/pin?wait=true", headers=headers)
        assert status == 200 and again["commands"] == outcome["commands"], "the outcome is answered again"

        send(run, "1", "I work as a nurse at the hospital in Boston.")  # the same turn, re-sent
        send(run, "3", "I am training for the Boston marathon.")
        after = wait_memories(run, {"1", "2", "3"})
        new = [m for m in after if m["id"] not in {b["id"] for b in before}]
        assert [m["source_turn_ids"] for m in new] == [["main:3"]], "the re-sent turn made nothing new"
        assert next(m for m in after if m["id"] == pinned)["pinned"], "the pin was kept"
    finally:
        run.stop()


def test_run_fresh_asks_before_deleting_and_keeps_everything_when_refused(tmp_path):
    data = tmp_path / "data"
    (data / "broker").mkdir(parents=True)
    (data / "broker" / "objects.sqlite3").write_bytes(b"kept")
    env = dict(os.environ, DATA_DIR=str(data))
    refused = subprocess.run([sys.executable, "-m", "streams", "run", "--fresh"], input="n\n", env=env,
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1
    assert "Delete every memory" in refused.stdout + refused.stderr
    assert (data / "broker" / "objects.sqlite3").read_bytes() == b"kept"
