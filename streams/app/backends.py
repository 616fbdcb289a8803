"""Numeric backends pinned to the CPU, before any library can pick one from what is installed.

A library that finds JAX (or CUDA) importable may use it on its own: `bm25s` ran its top-k on
JAX, and on a machine with JAX and a GPU driver but no usable GPU, workers crashed on their first
query ("Unable to initialize backend 'cuda'"). The service itself never imports bm25s, numba or
JAX (the embedders choose `device="cpu"` and ONNX Runtime's `CPUExecutionProvider` by name);
this pins what a dependency might still import, for the worker, `memstream run` and the bench.
"""
from __future__ import annotations

import os

CPU_ONLY_ENV = {"JAX_PLATFORMS": "cpu"}
"""JAX's platform list: "cpu" keeps it off CUDA, ROCm and TPU even when their plugins load."""


def pin_cpu_backends() -> None:
    """Set the variables of `CPU_ONLY_ENV` unless the operator set them (an explicit choice)."""
    for name, value in CPU_ONLY_ENV.items():
        os.environ.setdefault(name, value)
