"""`memstream bench mem0`: what can be checked without mem0 installed (it lives in its own venv):
the turn -> messages mapping, the runner's job and config, its network guard, its failure
report, and the message telling how to install the extra. No network, no model."""
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks import bench_mem0, mem0_runner
from benchmarks.bench_mem0 import Mem0NotInstalled, Mem0RunFailed
from streams.tools.locomo import load_conversation
from streams.cli.main import app

TINY = Path(__file__).parents[2] / "data" / "locomo_tiny.json"


def test_each_turn_becomes_one_message_with_its_text_role_and_speaker():
    conversation = load_conversation(TINY)
    for turn in conversation.turns:
        (message,) = bench_mem0.turn_messages(turn)
        assert message["content"] == turn.text  # the words memstream receives, caption included
        assert message["role"] == turn.role.value == "user"
        assert message.get("name") == turn.speaker


def test_a_turn_without_speaker_has_no_name():
    turn = load_conversation(TINY).turns[0].model_copy(update={"speaker": None})
    assert bench_mem0.turn_messages(turn) == [{"role": "user", "content": turn.text}]


def test_the_job_holds_every_turn_of_every_conversation_in_order(tmp_path):
    conversation = load_conversation(TINY)
    job = json.loads(json.dumps(bench_mem0.runner_job([conversation], tmp_path)))
    (sent,) = job["conversations"]
    assert job["model_path"] == str(tmp_path)
    assert sent["user_id"] == conversation.user_id
    assert [m[0]["content"] for m in sent["messages"]] == [t.text for t in conversation.turns]


def test_mem0_is_configured_with_local_stores_and_an_llm_that_cannot_leave_the_machine(tmp_path):
    config = mem0_runner.mem0_config("/models/minilm", str(tmp_path))
    assert config["embedder"]["provider"] == "huggingface"
    assert config["embedder"]["config"]["model"] == "/models/minilm"
    store = config["vector_store"]["config"]
    assert config["vector_store"]["provider"] == "qdrant" and store["path"].startswith(str(tmp_path))
    assert not {"host", "url", "port", "api_key"} & set(store)
    assert config["llm"]["config"]["openai_base_url"].startswith("http://127.0.0.1:")
    assert config["history_db_path"].startswith(str(tmp_path))


def test_the_runner_refuses_and_counts_network_connections(monkeypatch):
    monkeypatch.setattr(socket.socket, "connect", socket.socket.connect)  # restored after the test
    monkeypatch.setattr(socket.socket, "connect_ex", socket.socket.connect_ex)
    monkeypatch.setattr(mem0_runner, "_blocked", [])
    mem0_runner._guard_network()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        with pytest.raises(mem0_runner.NetworkAttempt):
            s.connect(("127.0.0.1", 9))
    assert len(mem0_runner._blocked) == 1


def test_a_failed_run_is_named_by_type_and_place_never_by_its_message():
    out = json.dumps({"error": "ValueError", "where": "main.py:12"})
    with pytest.raises(Mem0RunFailed, match="ValueError at main.py:12") as raised:
        bench_mem0.parse_runner_output(1, out)
    assert "Caroline" not in str(raised.value)
    with pytest.raises(Mem0RunFailed, match="no report"):
        bench_mem0.parse_runner_output(0, "Caroline said something")
    report = {"turns": 2, "turns_per_s": 4.0}
    assert bench_mem0.parse_runner_output(0, json.dumps(report)) == report


def test_the_runner_without_mem0_answers_its_failure_as_json():
    probe = subprocess.run([sys.executable, "-I", "-c", "import mem0"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("mem0 is installed in this interpreter")
    done = subprocess.run([sys.executable, "-I", str(bench_mem0.RUNNER)], capture_output=True, text=True,
                          input=json.dumps({"model_path": "/nowhere", "conversations": []}), timeout=120)
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"] == "ModuleNotFoundError"


def test_the_interpreter_is_the_option_then_the_env_then_the_project_venv(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(bench_mem0.MEM0_PYTHON_ENV, raising=False)
    assert bench_mem0.mem0_python() == sys.executable
    venv_python = tmp_path / ".mem0-venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.touch()
    assert bench_mem0.mem0_python() == str(Path(".mem0-venv/bin/python"))
    monkeypatch.setenv(bench_mem0.MEM0_PYTHON_ENV, "/env/python")
    assert bench_mem0.mem0_python() == "/env/python"
    assert bench_mem0.mem0_python("/opt/python") == "/opt/python"


def test_a_missing_interpreter_or_mem0_says_how_to_install_the_extra(tmp_path):
    with pytest.raises(Mem0NotInstalled, match=r"\./dev baselines"):
        bench_mem0.check_mem0(str(tmp_path / "no-python"))
    result = CliRunner().invoke(app, ["bench", "mem0", str(TINY), "--mem0-python", str(tmp_path / "no-python")])
    assert result.exit_code == 2
    assert "mem0 is not installed" in result.output and "baselines" in result.output
