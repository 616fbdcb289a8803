"""Any OpenAI-compatible embeddings server (the `openai` embedder): `POST /v1/embeddings` of
OpenAI, Ollama, vLLM, llama.cpp or LM Studio, through the official (sync) `openai` client.

- Batches: a call's texts go `batch_size` to a request, in order; `Services.embed` already runs
  `embed` off the event loop, so a slow server ties up that thread, never the loop.
- Dimension: the model's, read from the server's first answer (`create`, the embedder's load,
  asks once), unless `dimensions` names it (then sent as the request's `dimensions`). Every later
  answer is checked against it: a server that answers in another dimension (another model
  behind the same name, a restarted server with other weights) fails the batch with
  `OpenAIEmbedDimensionError`; vectors of another size never reach the index, whose rows, the
  S3 Vectors index and the stored documents are all sized by the first answer.
- Retries are ours, not the SDK's (its own are off): 429, 5xx, 408, timeouts and connection
  errors are retried with exponential backoff and full jitter (tenacity, as `titan`) up to
  `attempts`; other 4xx fail at once. Errors are named `OpenAIEmbedError` subclasses whose
  message has the status or the exception's type, never a text nor the key.
- Answers are validated: an embeddings list of one row per input, each a finite, non-zero list
  of numbers of the dimension; a server answering one vector per token (llama-cpp-python with a
  model without pooling) is refused unless `pool_tokens` (their mean is the text's vector).
- Profile: `OPENAI_PROFILE`'s bands, uncalibrated (`calibrated=False`, said once in the log),
  unless `profiles.OPENAI_CALIBRATED` holds the model's measured ones (docs/llm.md#embeddings).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import openai
from openai.types import CreateEmbeddingResponse
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from streams.observability.metrics import EMBED_REQUESTS
from streams.providers.embedders.base import EmbedderError, EmbedderProfile
from streams.providers.embedders.profiles import OPENAI_CALIBRATED, OPENAI_PROFILE

log = logging.getLogger(__name__)

LOCAL_API_KEY = "unused"
"""What the SDK is given when the server wants no key (it refuses to build a client without one)."""
PROBE_TEXT = "What dimension are your embeddings?"
"""The text of the load's one request, made to learn the model's dimension."""
OPENAI_EMBED_MODEL = "text-embedding-3-small"


class OpenAIEmbedError(EmbedderError):
    """The server did not embed a batch (the message has the status or the error's type, never
    a text nor the key). `outcome` labels `memstream_embed_requests_total`."""

    outcome = "error"


class OpenAIEmbedThrottledError(OpenAIEmbedError):
    """The server answered 429 on every attempt."""

    outcome = "throttled"


class OpenAIEmbedUnavailableError(OpenAIEmbedError):
    """The server answered 5xx or could not be reached on every attempt."""

    outcome = "unavailable"


class OpenAIEmbedTimeoutError(OpenAIEmbedUnavailableError):
    """Every attempt timed out (the request's timeout, or the server's 408/504)."""

    outcome = "timeout"


class OpenAIEmbedRequestError(OpenAIEmbedError):
    """The server refused the request (auth, unknown model, bad input); retrying would not help."""

    outcome = "request_error"


class OpenAIEmbedAnswerError(OpenAIEmbedError):
    """The server answered without one valid embedding per text (not JSON, another shape, a
    row missing, not numbers, zero or not finite, one vector per token unpooled)."""

    outcome = "invalid_answer"


class OpenAIEmbedDimensionError(OpenAIEmbedAnswerError):
    """The server answered in another dimension than its first answer's (or the configured
    one): the index holds vectors of that one, so the batch fails rather than mix them."""

    outcome = "dimension_changed"


_TRANSIENT = (OpenAIEmbedThrottledError, OpenAIEmbedUnavailableError)


def openai_profile(model: str, dimensions: int) -> EmbedderProfile:
    """The profile of `model` at `dimensions`: its measured bands when `OPENAI_CALIBRATED` has
    them, else `OPENAI_PROFILE`'s uncalibrated ones. Named `openai:<model>` (what metrics,
    caches and `streams.read.calibration.CURVES` key on)."""
    base = OPENAI_CALIBRATED.get(model, OPENAI_PROFILE)
    return replace(base, name=f"openai:{model}", dim=dimensions)


@dataclass(frozen=True)
class OpenAIEmbedOptions:
    """How the `openai` embedder is built (from the OPENAI_EMBED_* settings)."""

    model: str = OPENAI_EMBED_MODEL
    base_url: str | None = None
    api_key: str = field(default="", repr=False)
    """Kept out of the repr, so no log line or error can carry it."""
    dimensions: int | None = None
    batch_size: int = 64
    pool_tokens: bool = False
    timeout_s: float = 10.0
    attempts: int = 4
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0


def _mapped(exc: Exception) -> OpenAIEmbedError:
    """The named error of anything the SDK raises on `embeddings.create`."""
    if isinstance(exc, openai.APITimeoutError):
        return OpenAIEmbedTimeoutError("openai embeddings: request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return OpenAIEmbedUnavailableError("openai embeddings: server unreachable")
    if isinstance(exc, openai.APIResponseValidationError):
        return OpenAIEmbedAnswerError("openai embeddings: the answer does not match the API's schema")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        label = f"openai embeddings: HTTP {status}"
        if status == 429:
            return OpenAIEmbedThrottledError(label)
        if status in (408, 504):
            return OpenAIEmbedTimeoutError(label)
        if status >= 500:
            return OpenAIEmbedUnavailableError(label)
        return OpenAIEmbedRequestError(label)
    return OpenAIEmbedError(f"openai embeddings: {type(exc).__name__}")


class OpenAIEmbedder:
    """The `Embedder` of an OpenAI-compatible `/v1/embeddings` (see the module docstring).
    `client`: an `openai.OpenAI` (its retries are ignored: requests go out with none).
    `sleep` is tenacity's between attempts (tests pass a recorder)."""

    def __init__(self, client: openai.OpenAI, *, model: str = OPENAI_EMBED_MODEL,
                 dimensions: int | None = None, batch_size: int = 64, pool_tokens: bool = False,
                 timeout_s: float = 10.0, attempts: int = 4, backoff_initial_s: float = 0.1,
                 backoff_max_s: float = 5.0, sleep: Callable[[float], None] = time.sleep) -> None:
        if batch_size < 1 or attempts < 1 or (dimensions is not None and dimensions < 1):
            raise EmbedderError("the openai embedder needs batch_size >= 1, attempts >= 1 and "
                                "dimensions >= 1 when set")
        self.model = model
        self.batch_size = batch_size
        self.pool_tokens = pool_tokens
        self.timeout_s = timeout_s
        self._ask_dimensions = dimensions
        self.profile = openai_profile(model, dimensions or 0)
        """Its `dim` is 0 until the first answer when `dimensions` is unset (`create` asks)."""
        self._client = client.with_options(max_retries=0)
        self._retrying = Retrying(
            stop=stop_after_attempt(attempts),
            wait=wait_random_exponential(multiplier=backoff_initial_s, max=backoff_max_s),
            retry=retry_if_exception_type(_TRANSIENT), sleep=sleep, reraise=True)
        self._dimension_lock = threading.Lock()

    @classmethod
    def create(cls, options: OpenAIEmbedOptions, *, client: openai.OpenAI | None = None,
               sleep: Callable[[float], None] = time.sleep) -> OpenAIEmbedder:
        """The embedder of `options`, its dimension known: one request is made now (the load),
        so a wrong URL, key or model fails here rather than on the first turn. Without `client`,
        one of `openai.OpenAI` on the options' base URL and key."""
        if client is None:
            client = openai.OpenAI(api_key=options.api_key or LOCAL_API_KEY, base_url=options.base_url,
                                   timeout=options.timeout_s, max_retries=0)
        embedder = cls(client, model=options.model, dimensions=options.dimensions,
                       batch_size=options.batch_size, pool_tokens=options.pool_tokens,
                       timeout_s=options.timeout_s, attempts=options.attempts,
                       backoff_initial_s=options.backoff_initial_s,
                       backoff_max_s=options.backoff_max_s, sleep=sleep)
        embedder.embed([PROBE_TEXT])
        if not embedder.profile.calibrated:
            log.warning(
                "embedder %s (%d dims): its dedup bands and score curve are UNCALIBRATED defaults "
                "(auto-update >= %.2f, same-fact check >= %.2f, MiniLM's score curve) until "
                "`EMBEDDER=openai python -m benchmarks.calibration` and `python -m "
                "benchmarks.score_calibration` are run for it (docs/llm.md#embeddings)",
                embedder.profile.name, embedder.profile.dim, embedder.profile.semantic_auto,
                embedder.profile.semantic_check_low)
        return embedder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, in order; raises an `OpenAIEmbedError`."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise OpenAIEmbedRequestError("openai embeddings: cannot embed an empty text")
        if not texts:
            if not self.profile.dim:
                self.embed([PROBE_TEXT])
            return np.zeros((0, self.profile.dim), dtype=np.float32)
        rows = [self._retrying(self._request, texts[start:start + self.batch_size])
                for start in range(0, len(texts), self.batch_size)]
        return np.vstack(rows)

    def close(self) -> None:
        """Close the client's connection pool."""
        self._client.close()

    def _request(self, batch: list[str]) -> np.ndarray:
        extra: dict[str, Any] = {}
        if self._ask_dimensions is not None:
            extra["dimensions"] = self._ask_dimensions
        try:
            # `float`: every compatible server speaks it (the SDK's default asks base64).
            answer = self._client.embeddings.create(model=self.model, input=batch, encoding_format="float",
                                                    timeout=self.timeout_s, **extra)
            vectors = self._vectors(answer, len(batch))
        except OpenAIEmbedError as exc:
            EMBED_REQUESTS.labels(self.profile.name, exc.outcome).inc()
            raise
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes a named error
            error = _mapped(exc)
            EMBED_REQUESTS.labels(self.profile.name, error.outcome).inc()
            raise error from exc
        EMBED_REQUESTS.labels(self.profile.name, "ok").inc()
        return vectors

    def _vectors(self, answer: Any, count: int) -> np.ndarray:
        """The answer's rows in input order, checked and L2-normalised.

        The SDK does not validate answers: an HTML page comes back as a `str`, a JSON body of
        another shape as a response whose fields are missing."""
        data = getattr(answer, "data", None) if isinstance(answer, CreateEmbeddingResponse) else None
        if not isinstance(data, list) or len(data) != count:
            raise OpenAIEmbedAnswerError(f"openai embeddings: no list of {count} embeddings")
        indexes = [getattr(item, "index", None) for item in data]
        if sorted(i for i in indexes if isinstance(i, int)) == list(range(count)):
            data = sorted(data, key=lambda item: item.index)
        elif any(i is not None for i in indexes):
            raise OpenAIEmbedAnswerError("openai embeddings: the rows' indexes are not the inputs'")
        rows = np.stack([self._row(getattr(item, "embedding", None)) for item in data])
        self._check_dimension(rows.shape[1])
        return rows

    def _row(self, embedding: Any) -> np.ndarray:
        try:
            vector = np.asarray(embedding, dtype=np.float32)
        except (TypeError, ValueError):  # None, strings, ragged lists
            raise OpenAIEmbedAnswerError("openai embeddings: an embedding is not numbers") from None
        if vector.ndim == 2 and vector.shape[0] > 0:
            if not self.pool_tokens:
                raise OpenAIEmbedAnswerError(
                    "openai embeddings: one vector per token (a model without pooling); "
                    "OPENAI_EMBED_POOL_TOKENS=true takes their mean")
            vector = vector.mean(axis=0)
        if vector.ndim != 1 or vector.size == 0:
            raise OpenAIEmbedAnswerError("openai embeddings: an embedding is not a list of numbers")
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(vector).all() or not np.isfinite(norm) or norm == 0.0:
            raise OpenAIEmbedAnswerError("openai embeddings: an embedding is zero or not finite")
        return vector / norm

    def _check_dimension(self, dim: int) -> None:
        """The first answer names the dimension; every later one must have it."""
        with self._dimension_lock:
            if not self.profile.dim:
                self.profile = replace(self.profile, dim=dim)
                log.info("embedder %s: %d dimensions, from the server's first answer", self.profile.name, dim)
                return
        if dim != self.profile.dim:
            raise OpenAIEmbedDimensionError(
                f"openai embeddings: the server answered in {dim} dimensions, not the "
                f"{self.profile.dim} of its first answer (another model behind "
                f"{self.model!r}?); the index holds {self.profile.dim}-value vectors")


_DIMENSIONS: dict[tuple[str | None, str], int] = {}
_DIMENSIONS_LOCK = threading.Lock()


def known_dimensions(options: OpenAIEmbedOptions) -> int:
    """The dimension of the options' model: `options.dimensions`, else the server's first answer,
    asked once per process and server (a load of the embedder answers it too: `remember`)."""
    if options.dimensions is not None:
        return options.dimensions
    key = (options.base_url, options.model)
    with _DIMENSIONS_LOCK:
        if key not in _DIMENSIONS:
            embedder = OpenAIEmbedder.create(options)
            embedder.close()
            _DIMENSIONS[key] = embedder.profile.dim
        return _DIMENSIONS[key]


def remember(options: OpenAIEmbedOptions, embedder: OpenAIEmbedder) -> OpenAIEmbedder:
    """Record a loaded embedder's dimension for `known_dimensions`; returns it."""
    with _DIMENSIONS_LOCK:
        _DIMENSIONS.setdefault((options.base_url, options.model), embedder.profile.dim)
    return embedder
