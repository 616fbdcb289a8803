"""The llama.cpp server of the `local-llm` extra for a module of tests: started once, skipped,
saying why, where the packages cannot be built here."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from streams.tools.local_llm import LocalLLMUnavailable, LocalServer, model_path, serve, server_python


def local_server(embedding: bool = False) -> Iterator[LocalServer]:
    """SmolLM2-135M served until the generator is closed (`embedding`: `/v1/embeddings` too)."""
    try:
        python = server_python()
        gguf = model_path(python)
    except LocalLLMUnavailable as exc:
        pytest.skip(f"the local-llm packages cannot be built here: {exc}")
    with serve(python, gguf, embedding=embedding) as running:
        yield running
