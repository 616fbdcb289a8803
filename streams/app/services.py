"""What the stages of one worker share: the embedder, the LLM facade, the dedup settings.

The embedder's model is loaded once per process (it takes seconds) and only when first used;
every app built in the process with the same embedder settings shares it.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path

import numpy as np

from streams.settings import Settings
from streams.memory.config import DedupConfig
from streams.observability import metrics
from streams.providers.embedders import Embedder, EmbedderProfile, create_embedder
from streams.providers.embedders.configured import build_embedder, embedder_key, embedder_profile
from streams.providers.embedders.cpu import embed_measured
from streams.guarded.llm import GuardedLLM
from streams.read.calibration import ScoreCurve, curve_for
from streams.read.model_parts import ModelParts
from streams.write.contextual import TextVectors

log = logging.getLogger(__name__)

_loaded: dict[Hashable, Embedder] = {}
_loading = threading.Lock()


def _shared(key: Hashable, load: Callable[[], Embedder]) -> Embedder:
    with _loading:
        if key not in _loaded:
            _loaded[key] = load()
            log.info("embedder ready: %s (%d dims)", _loaded[key].profile.name, _loaded[key].profile.dim)
        return _loaded[key]


def shared_embedder(kind: str, batch_size: int, cache_dir: Path | None = None) -> Embedder:
    """The embedder `kind`, loaded once per process (`cache_dir`: see `create_embedder`)."""
    return _shared((kind, batch_size, cache_dir), lambda: create_embedder(kind, batch_size, cache_dir))


def models_dir(settings: Settings) -> Path:
    """Where the ONNX embedders keep their model files: EMBEDDER_CACHE_DIR, else DATA_DIR/models."""
    return settings.embedding.embedder_cache_dir or settings.kafka.data_dir / "models"


def settings_embedder(settings: Settings) -> Embedder:
    """The embedder of `settings` (EMBEDDER, EMBED_BATCH_SIZE, EMBEDDER_CACHE_DIR, and for
    `bedrock` the BEDROCK_EMBED_* settings), loaded once."""
    cache_dir = models_dir(settings)
    return _shared(embedder_key(settings, cache_dir), lambda: build_embedder(settings, cache_dir))


class Services:
    """The embedder, the LLM and the dedup configuration of one app (`embedder`/`llm` given:
    used instead of the settings' ones, e.g. by tests)."""

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None,
                 llm: GuardedLLM | None = None) -> None:
        self.settings = settings
        self._embedder = embedder
        self._llm = llm
        self._dedup_config: tuple[tuple[Settings, Embedder | None], DedupConfig] | None = None
        self._model_parts: ModelParts | None = None
        self.vectors = TextVectors()
        """The latest facts' texts' embeddings, made by ingest and read by dedup
        (`streams.write.contextual.TextVectors`)."""

    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = settings_embedder(self.settings)
        return self._embedder

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed off the event loop, so heartbeats and the web server keep running; the
        model's CPU for the call is counted in `memstream_embed_cpu_seconds_total`."""
        embedder = await self.warm_up()
        started = time.perf_counter()
        vectors, cpu_seconds = await asyncio.to_thread(embed_measured, embedder, list(texts))
        name = embedder.profile.name
        metrics.EMBED_SECONDS.labels(embedder=name).observe(time.perf_counter() - started)
        metrics.EMBED_TEXTS.labels(embedder=name).inc(len(texts))
        metrics.EMBED_CPU_SECONDS.labels(embedder=name).inc(cpu_seconds)
        return vectors

    def score_curve(self) -> ScoreCurve:
        """How a query item's relevance becomes its score, for this embedder and the settings'
        retrieval mode (`streams.read.calibration`)."""
        return curve_for(self.embedder().profile.name, self.settings.read.retrieval_mode)

    async def warm_up(self) -> Embedder:
        """The embedder, loaded off the event loop the first time (a worker does it as it
        starts); once loaded, no thread hop just to look it up."""
        if self._embedder is None:
            await asyncio.to_thread(self.embedder)
        return self.embedder()

    @property
    def llm(self) -> GuardedLLM:
        """The LLM facade (the settings' provider, or none: rules), created once."""
        if self._llm is None:
            self._llm = GuardedLLM.from_settings(self.settings)
        return self._llm

    @property
    def model_parts(self) -> ModelParts:
        """The searches of a combining question, from the model when one is configured and
        QUERY_MODEL_PARTS is on (`streams.read.model_parts`), created once: its answers are
        kept for the worker's life."""
        if self._model_parts is None:
            use = self.llm.configured and self.settings.read.query_model_parts
            self._model_parts = ModelParts(self.llm.query_parts if use else None)
        return self._model_parts

    def profile(self) -> EmbedderProfile:
        """The embedder profile's dedup bands, with any override from the settings applied.

        Known without loading the model, so nothing on the event loop waits for a model load.
        """
        base = self._embedder.profile if self._embedder is not None else embedder_profile(self.settings)
        s = self.settings
        return EmbedderProfile(
            base.name, base.dim,
            s.dedup.semantic_auto_update or base.semantic_auto,
            s.dedup.semantic_check_low or base.semantic_check_low,
            s.dedup.episodic_auto_update or base.episodic_auto,
            s.dedup.episodic_check_low or base.episodic_check_low,
            calibrated=base.calibrated,
        )

    def dedup_config(self) -> DedupConfig:
        """The dedup and consent policy over `profile()`: made again only when the settings or
        the embedder change (the store asks for it at every record; it is the same until the
        model is loaded, whose profile then answers)."""
        made_for = (self.settings, self._embedder)
        if self._dedup_config is None or any(a is not b for a, b in zip(self._dedup_config[0], made_for)):
            self._dedup_config = (made_for, DedupConfig.of(self.profile(), self.settings.dedup,
                                                           self.settings.consent))
        return self._dedup_config[1]
