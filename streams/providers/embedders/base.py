"""What every embedder shares: the interface, its error, and the profile of dedup bands.

The cosine scale differs between models (MiniLM's paraphrase scores sit lower than Titan's, and
int8 weights move every score a little), so the dedup bands of docs/architecture.md#write-path belong to an embedder

profile rather than being global constants.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Protocol, Sequence

import numpy as np

from streams.errors import MemstreamError


class EmbedderError(MemstreamError, RuntimeError):
    """The embedder could not be loaded or failed on a batch."""


@dataclass(frozen=True)
class EmbedderProfile:
    """Model name, dimension and the dedup bands recorded for that model."""

    name: str
    dim: int
    semantic_auto: float
    semantic_check_low: float
    episodic_auto: float
    episodic_check_low: float
    calibrated: bool = True
    """Whether the bands (`benchmarks.calibration`) and the score curve
    (`benchmarks.score_calibration`, `streams.read.calibration.CURVES`) were measured for this
    model; False: defaults, until someone runs them (EMBEDDER=openai with a model not measured)."""


Embed = Callable[[Sequence[str]], Awaitable[np.ndarray]]
"""An async embedding function: one L2-normalised float32 row per text (what stages are given)."""


class Embedder(Protocol):
    profile: EmbedderProfile

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text."""
        ...
