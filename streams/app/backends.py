"""Numeric backends pinned to the CPU, before any library can pick one from what is installed,
and numpy's BLAS kept to the thread that calls it.

A library that finds JAX (or CUDA) importable may use it on its own: `bm25s` ran its top-k on
JAX, and on a machine with JAX and a GPU driver but no usable GPU, workers crashed on their first
query ("Unable to initialize backend 'cuda'"). The service itself never imports bm25s, numba or
JAX (the embedders choose `device="cpu"` and ONNX Runtime's `CPUExecutionProvider` by name);
this pins what a dependency might still import, for the worker, `memstream run` and the bench.

OpenBLAS (numpy's BLAS) starts a thread per core and splits a matrix product across them; after
one, its threads spin-wait for the next. A worker's products are small (a user's memories
against each other in the lifecycle passes: a few hundred rows of 384), so on a busy worker the
split gains nothing and the spinning threads take cores from the event loop and the embedder's
threads: one thread, the caller's, unless the operator set `OPENBLAS_NUM_THREADS`
(docs/decisions.md#numpys-blas-runs-on-the-calling-thread).
"""
from __future__ import annotations

import os

CPU_ONLY_ENV = {"JAX_PLATFORMS": "cpu", "OPENBLAS_NUM_THREADS": "1"}
"""JAX's platform list: "cpu" keeps it off CUDA, ROCm and TPU even when their plugins load;
OpenBLAS's threads: one (read when numpy is first imported)."""


def pin_cpu_backends() -> None:
    """Set the variables of `CPU_ONLY_ENV` unless the operator set them (an explicit choice),
    and hold numpy's BLAS, when it was imported already, to `OPENBLAS_NUM_THREADS` threads."""
    for name, value in CPU_ONLY_ENV.items():
        os.environ.setdefault(name, value)
    try:
        threads = int(os.environ["OPENBLAS_NUM_THREADS"])
    except ValueError:  # the operator's own value, for OpenBLAS to read
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")
