"""Process-wide services of a worker: the embedder and the vector index cache."""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Sequence

import numpy as np

from streams.observability import metrics
from streams.providers.embedder import Embedder, create_embedder
from streams.providers.llm import GuardedLLM
from streams.app.settings import get_settings
from streams.memory.vector_index import VectorIndex

log = logging.getLogger(__name__)

_embedder: Embedder | None = None
_embedder_lock = threading.Lock()
_index: VectorIndex | None = None
_llm: GuardedLLM | None = None


def get_embedder() -> Embedder:
    """The embedder named by the settings, loaded once (model load takes seconds)."""
    global _embedder
    with _embedder_lock:
        if _embedder is None:
            settings = get_settings()
            _embedder = create_embedder(settings.embedder, settings.embed_batch_size)
            log.info("embedder ready: %s (%d dims)", _embedder.profile.name, _embedder.profile.dim)
        return _embedder


async def embed(texts: Sequence[str]) -> np.ndarray:
    """Embed off the event loop, so heartbeats and the web server keep running."""
    embedder = await asyncio.to_thread(get_embedder)
    started = time.perf_counter()
    vectors = await asyncio.to_thread(embedder.embed, list(texts))
    metrics.EMBED_SECONDS.labels(embedder=embedder.profile.name).observe(time.perf_counter() - started)
    metrics.EMBED_TEXTS.labels(embedder=embedder.profile.name).inc(len(texts))
    return vectors


def get_llm() -> GuardedLLM:
    """The LLM facade (provider from the settings, or none: rules), created once per process."""
    global _llm
    if _llm is None:
        _llm = GuardedLLM.from_settings(get_settings())
    return _llm


def get_index() -> VectorIndex:
    global _index
    if _index is None:
        _index = VectorIndex(get_embedder().profile.dim)
    return _index
