"""The worker pins numeric backends to the CPU before a library can pick one (issue 22)."""
from __future__ import annotations

import os
import subprocess
import sys

from streams.app.backends import pin_cpu_backends


def test_jax_is_kept_on_the_cpu_unless_the_operator_chose(monkeypatch):
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    pin_cpu_backends()
    assert os.environ["JAX_PLATFORMS"] == "cpu"
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    pin_cpu_backends()
    assert os.environ["JAX_PLATFORMS"] == "cuda"


BLAS_THREADS = ("import numpy, threadpoolctl\n"
                "from streams.app.backends import pin_cpu_backends\n"
                "pin_cpu_backends()\n"
                "print([pool['num_threads'] for pool in threadpoolctl.threadpool_info() "
                "if pool['user_api'] == 'blas'])")


def blas_threads(**env: str) -> str:
    """The BLAS pools' threads in a fresh process that imported numpy before pinning."""
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    result = subprocess.run([sys.executable, "-c", BLAS_THREADS], capture_output=True, text=True,
                            check=True, env={**base, **env})
    return result.stdout.strip()


def test_numpys_blas_runs_on_one_thread_unless_the_operator_chose():
    """OpenBLAS's spinning threads took cores from the event loop (decisions.md)."""
    assert blas_threads() == "[1]"
    assert blas_threads(OPENBLAS_NUM_THREADS="2") == "[2]"


def test_the_worker_and_its_stages_import_no_library_that_picks_a_backend():
    """bm25s runs a JAX top-k on import when JAX is installed; numba compiles for what it finds."""
    code = ("import sys, agents, streams.worker, streams.api.web, streams.cli.main\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'bm25s', 'jax', 'numba'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert result.stdout.strip() == "[]"


def test_a_worker_on_the_defaults_imports_no_llm_nor_aws_sdk():
    """The anthropic SDK took half a worker's import time, botocore is 17 MB: each is imported
    when configured (an LLM provider, the bedrock embedder, a sink)."""
    code = ("import sys, agents, streams.worker\n"
            "from streams.settings import Settings\n"
            "streams.worker.build_worker(Settings())\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'anthropic', 'boto3', 'botocore'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert result.stdout.strip() == "[]"
