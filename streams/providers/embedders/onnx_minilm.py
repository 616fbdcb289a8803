"""all-MiniLM-L6-v2 on ONNX Runtime: the `local-onnx` (fp32) and `local-int8` embedders.

The sentence-transformers pipeline, without torch at inference: the model's own tokenizer.json
(truncation at the model's max_seq_length, 256; padding to the longest text of a batch), the
ONNX encoder (`onnx_export`), mean pooling over the attention mask and L2 normalisation. Texts
are embedded longest first, as sentence-transformers does, so a batch pads little.

`local-int8` runs one text per model run (see `__init__`), so it parallelises across texts, not
inside a run: its session runs on one thread, and a call of several texts runs them on a pool of
`threads` threads at once (ONNX Runtime's `run` is thread-safe). For texts this short, a run's
own intra-op threads mostly wait on each other: on 2 cores, two texts at once took 2.1 ms a text
and 4.1 ms of CPU, where one text on two intra-op threads took 3.8 ms and 5.7 ms of CPU (600
LoCoMo turns, the same vectors bit for bit). A call of one text (a query) runs on its caller's
thread: one thread was as fast as two for questions (p50 1.6 against 1.7-1.9 ms).
"""
from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

import numpy as np
from joblib.externals.loky.backend.context import cpu_count as usable_cpus

from streams.providers.embedders.base import EmbedderError, EmbedderProfile
from streams.providers.embedders.cpu import CallCpu, helper_threads_since, native_threads
from streams.providers.embedders.minilm import minilm_dir, offline_env
from streams.providers.embedders.onnx_export import INPUTS, onnx_path
from streams.providers.embedders.profiles import MINILM_INT8_PROFILE, MINILM_ONNX_PROFILE


_OWN_THREAD = CallCpu()
"""The CPU of a call on the thread that makes it, and no other (a `local-int8` run)."""


def intra_op_threads() -> int:
    """Threads of one model call (`local-int8`: texts embedded at once): the cores this process
    may use, at most 4 (a worker also runs its event loop and consumers; more threads than
    cores only contend). The cores it may use, not the machine's: its CPU affinity (`taskset`,
    a pinned container) and its container's CPU quota (cgroup `cpu.max`) bound them, as read by
    joblib's loky. A worker limited to 2 CPUs on a 64-core host that ran 4 threads would be
    throttled by its quota in every model call."""
    return max(1, min(4, usable_cpus()))


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
        `threads` (None: `intra_op_threads()`): a model run's threads; `int8`: the texts run at
        once, each run on one thread (module doc)."""
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
        threads = threads or intra_op_threads()
        options.intra_op_num_threads = 1 if int8 else threads
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
        # time is deterministic and still ~5x local's batched texts/s. The texts of a call run
        # in parallel, one thread each (module doc); no lock: the pool bounds them.
        self._one_per_run = int8
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="embed") if int8 and threads > 1 else None
        # fp32: batches, one call at a time (a run already uses every intra-op thread).
        self._batch_size = max(1, batch_size)
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_measured(texts)[0]

    def embed_measured(self, texts: Sequence[str]) -> tuple[np.ndarray, float]:
        """`embed(texts)` and the CPU seconds it used. int8: tokenising and pooling on the calling
        thread, and each text's run on the thread that ran it, summed, so calls may overlap.
        fp32: the calling
        thread's and the session's intra-op threads' (`streams.providers.embedders.cpu`),
        measured under the lock that keeps calls one at a time."""
        if not self._one_per_run:
            with self._lock:
                return self._cpu.measure(lambda: self._embed(texts))
        out = np.zeros((len(texts), self.profile.dim), dtype=np.float32)
        if not texts:
            return out, 0.0
        inputs, cpu_seconds = _OWN_THREAD.measure(lambda: self._inputs(texts))
        runs = (self._pool.map(self._measured_run, inputs) if self._pool is not None and len(texts) > 1
                else map(self._measured_run, inputs))
        hidden = []
        for state, used in runs:
            hidden.append(state)
            cpu_seconds += used

        def pool() -> None:
            for row, (state, (_, mask, _)) in enumerate(zip(hidden, inputs)):
                out[row] = _mean_pooled(state, mask)[0]
        return out, cpu_seconds + _OWN_THREAD.measure(pool)[1]

    def _inputs(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Each text's model inputs (ids, attention mask, token types), unpadded: all tokenised
        at once on the calling thread, so the pool's threads hold the GIL only to start a run
        and hand back its result. The GIL matters: while a pool thread held it (tokenising,
        pooling), the event loop waited on every call that lets it go, even numpy's sorts of a
        few hundred scores (docs/decisions.md#embedder-threads-off-the-gil)."""
        encodings = self._tokenizer.encode_batch(list(texts))
        inputs = []
        for encoding in encodings:
            length = sum(encoding.attention_mask)
            inputs.append(tuple(np.array([field[:length]], dtype=np.int64) for field in
                                (encoding.ids, encoding.attention_mask, encoding.type_ids)))
        return inputs  # type: ignore[return-value]  # three arrays each

    def _measured_run(self, inputs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, float]:
        """One text's run (its last hidden state) and the CPU seconds it used on the thread that
        ran it (a one-thread session has no intra-op helpers)."""
        return _OWN_THREAD.measure(lambda: self._run(inputs))

    def _run(self, inputs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        (hidden,) = self._session.run(None, dict(zip(INPUTS, inputs)))
        return hidden

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
        return _mean_pooled(self._run((ids, mask, types)), mask)


def _mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean pooling over the attention mask, L2-normalised: sentence-transformers' head."""
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
