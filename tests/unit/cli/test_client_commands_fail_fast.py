"""Issue 48, finding 11: `memstream send`, `replay` and `watch` against a broker that never
answers (a TLS client on a plaintext listener waits so) end within KAFKA_CONNECT_TIMEOUT_SECONDS
with one line saying why and exit code 1, never a traceback; a KAFKA_BROKER_URL that is no
bootstrap list (`host:abc`) is one line naming it (exit 2).

Each command runs as a subprocess, as a user types it. No duration is asserted: the message
says which bound ended the wait; GUARD_S only guards a hang."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]
GUARD_S = 180
"""A guard against a hang (aiokafka's own retries wait 40 s and more), never a measure."""
TURNS = ('{"user_id": "ana", "thread_id": "t1", "turn_id": "1", "role": "user", '
         '"text": "I adopted a dog named Luna.", "ts": "2024-05-01T10:00:00+00:00"}\n')


def memstream(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streams", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "80", **env}, timeout=GUARD_S, cwd=ROOT)


def one_line(result: subprocess.CompletedProcess) -> str:
    """The command's only line of output (on stderr), which is no traceback."""
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stdout + result.stderr
    return lines[0]


@pytest.fixture
def silent() -> Iterator[str]:
    """host:port of a listener that never accepts nor answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


@pytest.fixture
def turns(tmp_path: Path) -> Path:
    path = tmp_path / "turns.jsonl"
    path.write_text(TURNS)
    return path


@pytest.mark.parametrize("command", ["send", "replay", "watch"])
def test_a_broker_that_never_answers_is_one_line_within_the_timeout(silent, turns, command) -> None:
    args = {"send": ["send", "--user", "ana", "I adopted a dog named Luna."],
            "replay": ["replay", str(turns)], "watch": ["watch"]}[command]
    result = memstream(*args, env={"KAFKA_BROKER_URL": silent, "KAFKA_SECURITY_PROTOCOL": "SSL",
                                   "KAFKA_CONNECT_TIMEOUT_SECONDS": "1"})
    assert result.returncode == 1
    line = one_line(result)
    assert line.startswith(f"{command} failed: ")
    assert f"no answer from {silent} within 1s (KAFKA_CONNECT_TIMEOUT_SECONDS)" in line


@pytest.mark.parametrize("command", ["send", "replay"])
def test_a_broker_url_that_is_no_bootstrap_list_is_one_line(turns, command) -> None:
    args = ["send", "--user", "ana", "hi"] if command == "send" else ["replay", str(turns)]
    result = memstream(*args, env={"KAFKA_BROKER_URL": "host:abc"})
    assert result.returncode == 2
    line = one_line(result)
    assert line.startswith("invalid settings: KAFKA_BROKER_URL='host:abc'")
    assert "the port 'abc' is not a number from 1 to 65535" in line


def test_a_broker_option_that_is_no_bootstrap_list_is_one_line() -> None:
    result = memstream("send", "--broker", "host:abc", "--user", "ana", "hi", env={})
    assert result.returncode == 1
    assert "the port 'abc' is not a number" in one_line(result)


@pytest.mark.parametrize("command", ["run", "worker", "broker"])
def test_a_service_command_with_a_setting_that_is_not_valid_is_one_line(command) -> None:
    """A typo in a setting (LLM_EXTRACTION=defered) ends `memstream run` before it starts
    anything, with one line naming the setting (exit 2), not a traceback."""
    result = memstream(command, env={"LLM_EXTRACTION": "defered"})
    assert result.returncode == 2
    line = one_line(result)
    assert line.startswith("invalid settings: LLM_EXTRACTION") and "deferred" in line
