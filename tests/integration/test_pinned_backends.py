"""No library picks an accelerator on its own in a worker (issue 22): with a JAX on the path that
imports but fails to initialise any backend (as on a machine with JAX and a GPU driver but no
usable GPU), the worker starts, turns turns into memories and serves queries."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import (
    a_worker,
    own_stack,
    make_turn,
    produce,
    query,
    unique_user,
    wait_processed,
)

pytestmark = pytest.mark.integration

BROKEN_JAX = {
    "jax/__init__.py": "from jax import lax  # noqa: F401\n",
    "jax/lax.py": (
        "def top_k(*args, **kwargs):\n"
        "    raise RuntimeError(\"Unable to initialize backend 'cuda': no CUDA-capable device\")\n"
    ),
}


@pytest.fixture(scope="module")
def broken_jax_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("broken-jax")
    for name, text in BROKEN_JAX.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _python_with(path: Path, code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(path))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_the_broken_jax_breaks_a_library_that_picks_it(broken_jax_path):
    """The stand-in is what the test claims: bm25s, which picks JAX when it can import it, fails
    on import with it on the path (so a worker that imported bm25s would not start)."""
    result = _python_with(broken_jax_path, "import bm25s")
    assert result.returncode != 0 and "Unable to initialize backend 'cuda'" in result.stderr


broker, _ = own_stack()  # its worker is its own too: below, with the broken JAX on its path


@pytest.fixture(scope="module")
def worker(broker, tmp_path_factory, broken_jax_path):
    yield from a_worker(broker, tmp_path_factory, app_id="memstream-broken-jax",
                        env={"PYTHONPATH": str(broken_jax_path)})


def test_a_worker_with_a_broken_jax_on_the_path_serves_queries(worker):
    user = unique_user("jax")
    turns = [make_turn(user, "1", "I adopted a dog named Rex last week.")]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    hits = asyncio.run(query(worker.api_url, user, "What is the name of my dog?"))
    assert any("Rex" in hit["summary"] for hit in hits)
