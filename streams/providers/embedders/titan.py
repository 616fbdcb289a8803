"""Bedrock Titan Text Embeddings V2 (the `bedrock` embedder), through boto3 `invoke_model`.

Titan takes one `inputText` per call, so a batch is embedded by running its calls concurrently on
a bounded thread pool (`BEDROCK_EMBED_CONCURRENCY`); the caller (`Services.embed`) already runs
`embed` off the event loop, so a slow Bedrock ties up these threads, never the loop.

Retries are ours, not botocore's (its client is built with one attempt): throttling, 5xx, model
not ready, timeouts and connection errors are retried with exponential backoff and full jitter
(tenacity) up to `attempts`; anything else (validation, access denied, missing credentials) fails
at once. What is left after the last attempt is raised as a named `TitanEmbedError` subclass whose
message carries the error code, never the text.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from streams.providers.embedders.base import EmbedderError, EmbedderProfile
from streams.providers.embedders.profiles import TITAN_V2_PROFILE

TITAN_DIMENSIONS = (256, 512, 1024)
TITAN_MAX_CHARS = 50_000  # Titan V2 takes up to 50,000 characters (8,192 tokens) per text

_THROTTLED = {"ThrottlingException", "TooManyRequestsException", "ServiceQuotaExceededException"}
_SERVER = {"InternalServerException", "ServiceUnavailableException", "ModelNotReadyException",
           "ModelErrorException", "ModelTimeoutException"}


class TitanEmbedError(EmbedderError):
    """Titan did not embed a text (the message has the error code, never the text)."""


class TitanThrottledError(TitanEmbedError):
    """Bedrock throttled every attempt."""


class TitanUnavailableError(TitanEmbedError):
    """Bedrock answered 5xx or could not be reached on every attempt."""


class TitanTimeoutError(TitanUnavailableError):
    """Every attempt timed out (connect or read timeout)."""


class TitanRequestError(TitanEmbedError):
    """Bedrock refused the request (validation, access, credentials); retrying would not help."""


class TitanAnswerError(TitanEmbedError):
    """Bedrock answered without an embedding of the expected dimension."""


_TRANSIENT = (TitanThrottledError, TitanUnavailableError)


def titan_profile(dimensions: int = TITAN_V2_PROFILE.dim) -> EmbedderProfile:
    """Titan V2's profile at `dimensions` (256, 512 or 1024). Seed 002's bands were recorded at
    1024 d; the smaller outputs keep them (not calibrated separately)."""
    if dimensions not in TITAN_DIMENSIONS:
        raise EmbedderError(f"Titan V2 embeds in {TITAN_DIMENSIONS} dimensions, not {dimensions}")
    return replace(TITAN_V2_PROFILE, dim=dimensions)


@dataclass(frozen=True)
class TitanOptions:
    """How the `bedrock` embedder is built (from the BEDROCK_EMBED_* settings)."""

    region: str = "us-east-1"
    model_id: str = TITAN_V2_PROFILE.name
    dimensions: int = TITAN_V2_PROFILE.dim
    concurrency: int = 8
    connect_timeout_s: float = 2.0
    read_timeout_s: float = 10.0
    attempts: int = 4
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0


def _mapped(exc: Exception) -> TitanEmbedError:
    """The named error of anything boto3 raises on `invoke_model`."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        label = f"bedrock titan: {code or status}"
        if code in _THROTTLED or status == 429:
            return TitanThrottledError(label)
        if code in _SERVER or status >= 500:
            return TitanUnavailableError(label)
        return TitanRequestError(label)
    if isinstance(exc, (ReadTimeoutError, ConnectTimeoutError)):
        return TitanTimeoutError(f"bedrock titan: {type(exc).__name__}")
    if isinstance(exc, (EndpointConnectionError, ConnectionClosedError)):
        return TitanUnavailableError(f"bedrock titan: {type(exc).__name__}")
    if isinstance(exc, BotoCoreError):  # missing credentials, bad parameters, ...
        return TitanRequestError(f"bedrock titan: {type(exc).__name__}")
    return TitanEmbedError(f"bedrock titan: {type(exc).__name__}")


class TitanV2Embedder:
    """The `Embedder` of Titan Text Embeddings V2 over a boto3 `bedrock-runtime` client (see the
    module docstring). `sleep` is tenacity's between attempts (tests pass a recorder)."""

    def __init__(self, client: Any, *, model_id: str = TITAN_V2_PROFILE.name,
                 dimensions: int = TITAN_V2_PROFILE.dim, concurrency: int = 8, attempts: int = 4,
                 backoff_initial_s: float = 0.1, backoff_max_s: float = 5.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if concurrency < 1 or attempts < 1:
            raise EmbedderError("the Titan embedder needs concurrency >= 1 and attempts >= 1")
        self.profile = titan_profile(dimensions)
        self._client = client
        self.model_id = model_id
        self.concurrency = concurrency
        self._retrying = Retrying(
            stop=stop_after_attempt(attempts),
            wait=wait_random_exponential(multiplier=backoff_initial_s, max=backoff_max_s),
            retry=retry_if_exception_type(_TRANSIENT), sleep=sleep, reraise=True)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @classmethod
    def create(cls, options: TitanOptions, *, client: Any | None = None,
               sleep: Callable[[float], None] = time.sleep) -> TitanV2Embedder:
        """The embedder of `options`; without `client`, a `bedrock-runtime` client from the default
        AWS credential chain with the options' timeouts and botocore's own retries off."""
        if client is None:
            client = bedrock_runtime_client(options)
        return cls(client, model_id=options.model_id, dimensions=options.dimensions,
                   concurrency=options.concurrency, attempts=options.attempts,
                   backoff_initial_s=options.backoff_initial_s, backoff_max_s=options.backoff_max_s,
                   sleep=sleep)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, in order; raises a `TitanEmbedError`."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise TitanRequestError("bedrock titan: cannot embed an empty text")
        if not texts:
            return np.zeros((0, self.profile.dim), dtype=np.float32)
        if len(texts) == 1 or self.concurrency == 1:
            rows = [self._embed_one(text) for text in texts]
        else:
            rows = self._embed_concurrently(texts)
        return np.stack(rows)

    def close(self) -> None:
        """Stop the thread pool (idle threads only; boto3 clients hold nothing to release)."""
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None

    def _embed_concurrently(self, texts: list[str]) -> list[np.ndarray]:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="titan-embed")
            pool = self._pool
        futures: list[Future[np.ndarray]] = [pool.submit(self._embed_one, text) for text in texts]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:  # one text failed for good: the batch fails, stop the rest
                future.cancel()
            raise

    def _embed_one(self, text: str) -> np.ndarray:
        return self._retrying(self._invoke, text)

    def _invoke(self, text: str) -> np.ndarray:
        body = json.dumps({"inputText": text[:TITAN_MAX_CHARS], "dimensions": self.profile.dim,
                           "normalize": True})
        try:
            response = self._client.invoke_model(modelId=self.model_id, body=body,
                                                 contentType="application/json",
                                                 accept="application/json")
            raw = response["body"].read()
        except Exception as exc:  # noqa: BLE001 - every boto3 failure becomes a named error
            raise _mapped(exc) from exc
        return self._vector(raw)

    def _vector(self, raw: bytes) -> np.ndarray:
        try:
            payload = json.loads(raw)
        except ValueError:
            raise TitanAnswerError("bedrock titan: the answer is not JSON") from None
        embedding = payload.get("embedding") if isinstance(payload, dict) else None
        if not isinstance(embedding, list) or len(embedding) != self.profile.dim:
            raise TitanAnswerError(f"bedrock titan: no embedding of {self.profile.dim} numbers")
        try:
            vector = np.asarray(embedding, dtype=np.float32)
        except (TypeError, ValueError):
            raise TitanAnswerError("bedrock titan: the embedding is not numbers") from None
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(vector).all() or norm == 0.0:
            raise TitanAnswerError("bedrock titan: the embedding is zero or not finite")
        return vector / norm  # normalize=true already; re-normalised against float drift


def bedrock_runtime_client(options: TitanOptions) -> Any:
    """A `bedrock-runtime` client with the options' connect/read timeouts, one attempt per call
    (the embedder retries), and a connection pool as large as its concurrency."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=options.connect_timeout_s, read_timeout=options.read_timeout_s,
                    retries={"total_max_attempts": 1, "mode": "standard"},
                    max_pool_connections=max(10, options.concurrency))
    return boto3.client("bedrock-runtime", region_name=options.region, config=config)
