"""all-MiniLM-L6-v2 on ONNX Runtime: the `local-onnx` (fp32) and `local-int8` embedders.

The sentence-transformers pipeline, without torch at inference: the model's own tokenizer.json
(truncation at the model's max_seq_length, 256; padding to the longest text of a batch), the
ONNX encoder (`onnx_export`), mean pooling over the attention mask and L2 normalisation. Texts
are embedded longest first, as sentence-transformers does, so a batch pads little.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from streams.providers.embedders.base import EmbedderError, EmbedderProfile
from streams.providers.embedders.cpu import CallCpu, helper_threads_since, native_threads
from streams.providers.embedders.minilm import minilm_dir, offline_env
from streams.providers.embedders.onnx_export import INPUTS, onnx_path
from streams.providers.embedders.profiles import MINILM_INT8_PROFILE, MINILM_ONNX_PROFILE


def intra_op_threads() -> int:
    """Threads of one model call: the machine's cores, at most 4 (a worker also runs its event
    loop and consumers; more threads than cores only contend)."""
    return max(1, min(4, os.cpu_count() or 1))


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 through ONNX Runtime on the CPU; `int8`: dynamically quantised weights.

    The ONNX file is made on first use and cached under `cache_dir` (see `onnx_export`).
    """

    def __init__(self, cache_dir: Path, *, int8: bool, batch_size: int = 32,
                 model_dir: Path | None = None, spinning: bool = True,
                 threads: int | None = None) -> None:
        """`spinning`: ONNX Runtime's intra-op threads spin-wait for the next piece of work
        (its default). That is fastest for the model alone; in a worker, whose event loop needs
        a core between model calls, the spinning threads take it (EMBEDDER_THREAD_SPINNING).
        `threads`: a model run's threads (None: `intra_op_threads()`)."""
        offline_env()
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - declared dependency
            raise EmbedderError("install the project: the ONNX embedders need onnxruntime") from exc
        self.profile: EmbedderProfile = MINILM_INT8_PROFILE if int8 else MINILM_ONNX_PROFILE
        model_dir = model_dir or minilm_dir()
        self.model_file = onnx_path(model_dir, Path(cache_dir), int8=int8)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or intra_op_threads()
        options.inter_op_num_threads = 1
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        before = native_threads()
        self._session = ort.InferenceSession(str(self.model_file), options,
                                             providers=["CPUExecutionProvider"])
        # The session's intra-op pool starts with it: its threads' CPU is the model's too.
        self._cpu = CallCpu(helper_threads_since(before))
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_seq_length(model_dir))
        self._tokenizer.enable_padding(pad_id=self._tokenizer.token_to_id("[PAD]") or 0, pad_token="[PAD]")
        # int8: one text per run. Dynamic quantisation scales a batch's activations together, so
        # a text's vector depended on the texts beside it (cosine 0.995 alone vs in a batch):
        # a replay after a crash, batched differently, then decided dedup differently. One at a
        # time is deterministic and still ~5x local's batched texts/s.
        self._batch_size = 1 if int8 else max(1, batch_size)
        # One call at a time: a run already uses every intra-op thread, and two would contend.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self._embed(texts)

    def embed_measured(self, texts: Sequence[str]) -> tuple[np.ndarray, float]:
        """`embed(texts)` and the CPU seconds it used: the calling thread's and the session's
        intra-op threads' (`streams.providers.embedders.cpu`), measured under the lock that
        keeps calls one at a time."""
        with self._lock:
            return self._cpu.measure(lambda: self._embed(texts))

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.profile.dim), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            rows = order[start:start + self._batch_size]
            out[rows] = self._embed_batch([texts[i] for i in rows])
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = self._session.run(None, dict(zip(INPUTS, (ids, mask, types))))
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def max_seq_length(model_dir: Path) -> int:
    """sentence-transformers' truncation length (sentence_bert_config.json; 256 for MiniLM),
    not tokenizer.json's own 128."""
    try:
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, KeyError, ValueError):
        return 256
