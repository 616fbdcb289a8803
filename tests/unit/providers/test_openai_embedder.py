"""EMBEDDER=openai against a fake OpenAI-compatible /v1/embeddings over real HTTP, through the real
`openai` client: the dimension read from the first answer and held to, batching, retries of 5xx
and timeouts, garbage answers, empty input, the settings, and a turn stored at the discovered
dimension and found again.

The embedder is sync (a worker runs it in a thread): each call runs in `asyncio.to_thread` while
the fake answers on the test's event loop. Timeouts are a fake that never answers until released
(only the request's timeout can end the wait); retries' backoff goes to a recorder, not a sleep.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import openai
import pytest

from sinks.s3vectors import index_dimension
from streams.app.inprocess import InProcessPipeline
from streams.app.services import Services
from streams.providers.embedders import EMBEDDER_KINDS, OPENAI, EmbedderError, profile_of
from streams.providers.embedders.configured import build_embedder, embedder_profile, openai_options
from streams.providers.embedders.openai_embedder import (
    PROBE_TEXT,
    OpenAIEmbedAnswerError,
    OpenAIEmbedder,
    OpenAIEmbedDimensionError,
    OpenAIEmbedOptions,
    OpenAIEmbedRequestError,
    OpenAIEmbedThrottledError,
    OpenAIEmbedTimeoutError,
    OpenAIEmbedUnavailableError,
    openai_profile,
)
from streams.providers.embedders.profiles import OPENAI_PROFILE
from streams.settings import Settings
from streams.tools.broker import free_port
from tests.unit.providers.conftest import HANG_GUARD_S, sample
from tests.unit.providers.openai_embeddings_fake import (  # noqa: F401 - the fixture
    DIM,
    EmbedReply,
    FakeEmbeddingsAPI,
    bag_of_words,
    fake_embeddings,
)
from topics.turns import Role, Turn

MODEL = "nomic-embed-text"
KEY = "sk-test-secret-never-logged"
TEXTS = ["Ana has a dog named Luna.", "Ana moved to Lisbon.", "Ana works at a bakery."]


def unit_rows(texts: Sequence[str], dim: int = DIM) -> np.ndarray:
    rows = np.stack([bag_of_words(t, dim) for t in texts])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class Sleeps(list[float]):
    """tenacity's sleep between attempts, recorded instead of slept."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def embedder_of(fake: FakeEmbeddingsAPI, sleeps: Callable[[float], None] | None = None,
                **options: Any) -> OpenAIEmbedder:
    """The embedder on the fake, created (so its probe is the fake's first request)."""
    chosen = {"model": MODEL, "base_url": fake.base_url, "api_key": KEY, **options}
    return OpenAIEmbedder.create(OpenAIEmbedOptions(**chosen), sleep=sleeps if sleeps is not None else Sleeps())


async def embedded(embedder: OpenAIEmbedder, texts: Sequence[str]) -> np.ndarray:
    return await asyncio.wait_for(asyncio.to_thread(embedder.embed, list(texts)), HANG_GUARD_S)


def requests_counted(outcome: str) -> float:
    return sample("memstream_embed_requests_total", embedder=f"openai:{MODEL}", outcome=outcome)


# --- the dimension -----------------------------------------------------------------------------

async def test_the_dimension_is_the_first_answers(fake_embeddings: FakeEmbeddingsAPI) -> None:
    fake_embeddings.dim = 40
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings)

    assert fake_embeddings.inputs() == [[PROBE_TEXT]], "the load asks once"
    assert (embedder.profile.name, embedder.profile.dim) == (f"openai:{MODEL}", 40)
    vectors = await embedded(embedder, TEXTS)
    np.testing.assert_allclose(vectors, unit_rows(TEXTS, 40), atol=1e-6)
    assert vectors.dtype == np.float32
    body, headers = fake_embeddings.requests[-1]["body"], fake_embeddings.requests[-1]["headers"]
    assert (body["model"], body["input"], body["encoding_format"]) == (MODEL, TEXTS, "float")
    assert "dimensions" not in body, "unset: the server's own dimension, not asked for"
    assert headers["authorization"] == f"Bearer {KEY}"


async def test_a_configured_dimension_is_asked_for_and_known_without_asking(
    fake_embeddings: FakeEmbeddingsAPI,
) -> None:
    settings = Settings(embedder="openai", openai_embed_base_url=fake_embeddings.base_url,
                        openai_embed_dimensions=16)
    assert embedder_profile(settings).dim == 16 and fake_embeddings.requests == []
    embedder = await asyncio.to_thread(build_embedder, settings)
    assert fake_embeddings.requests[0]["body"]["dimensions"] == 16
    assert (await embedded(embedder, TEXTS)).shape == (3, 16)


async def test_a_server_that_changes_dimension_fails_the_batch(fake_embeddings: FakeEmbeddingsAPI) -> None:
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings)
    fake_embeddings.script(EmbedReply(dim=DIM * 2))
    before = requests_counted("dimension_changed")

    with pytest.raises(OpenAIEmbedDimensionError, match=f"{DIM * 2} dimensions, not the {DIM}"):
        await embedded(embedder, TEXTS)

    assert len(fake_embeddings.requests) == 2, "not retried: the server would answer the same"
    assert requests_counted("dimension_changed") == before + 1
    assert embedder.profile.dim == DIM, "the first answer's dimension is kept"


async def test_a_server_answering_another_dimension_than_configured_fails_at_load(
    fake_embeddings: FakeEmbeddingsAPI,
) -> None:
    fake_embeddings.script(EmbedReply(dim=8))  # a server that ignores `dimensions`
    with pytest.raises(OpenAIEmbedDimensionError):
        await asyncio.to_thread(embedder_of, fake_embeddings, dimensions=16)


# --- batching and order ------------------------------------------------------------------------

async def test_texts_go_batch_size_to_a_request_and_come_back_in_order(
    fake_embeddings: FakeEmbeddingsAPI,
) -> None:
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings, batch_size=3)
    fake_embeddings.script(EmbedReply(shuffled=True))  # rows listed last first, by `index`
    texts = [f"fact number {n} about Ana" for n in range(7)]

    vectors = await embedded(embedder, texts)

    assert fake_embeddings.inputs()[1:] == [texts[0:3], texts[3:6], texts[6:7]]
    np.testing.assert_allclose(vectors, unit_rows(texts), atol=1e-6)


async def test_per_token_vectors_are_refused_unless_pooled(fake_embeddings: FakeEmbeddingsAPI) -> None:
    fake_embeddings.script(EmbedReply(per_token=True))
    with pytest.raises(OpenAIEmbedAnswerError, match="one vector per token"):
        await asyncio.to_thread(embedder_of, fake_embeddings)
    pooled = await asyncio.to_thread(embedder_of, fake_embeddings, pool_tokens=True)
    np.testing.assert_allclose(await embedded(pooled, TEXTS), unit_rows(TEXTS), atol=1e-6)


# --- empty input -------------------------------------------------------------------------------

async def test_no_texts_make_no_request_and_an_empty_text_is_refused(fake_embeddings: FakeEmbeddingsAPI) -> None:
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings)
    sent = len(fake_embeddings.requests)

    assert (await embedded(embedder, [])).shape == (0, DIM)
    with pytest.raises(OpenAIEmbedRequestError, match="empty text"):
        await embedded(embedder, ["Ana has a dog.", "  "])
    assert len(fake_embeddings.requests) == sent


# --- failures: retried, or not -----------------------------------------------------------------

async def test_a_500_is_retried_with_backoff_and_then_answers(fake_embeddings: FakeEmbeddingsAPI) -> None:
    sleeps = Sleeps()
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings, sleeps, attempts=3)
    fake_embeddings.script(EmbedReply.error(500), EmbedReply.error(503), EmbedReply())
    before = requests_counted("unavailable")

    np.testing.assert_allclose(await embedded(embedder, TEXTS), unit_rows(TEXTS), atol=1e-6)

    assert len(fake_embeddings.requests) == 4 and len(sleeps) == 2
    assert requests_counted("unavailable") == before + 2


async def test_500s_on_every_attempt_raise_unavailable(fake_embeddings: FakeEmbeddingsAPI) -> None:
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings, attempts=3)
    fake_embeddings.script(EmbedReply.error(500))
    with pytest.raises(OpenAIEmbedUnavailableError, match="HTTP 500"):
        await embedded(embedder, TEXTS)
    assert len(fake_embeddings.requests) == 1 + 3


async def test_a_429_is_retried_and_named_throttled(fake_embeddings: FakeEmbeddingsAPI) -> None:
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings, attempts=2)
    fake_embeddings.script(EmbedReply.error(429))
    with pytest.raises(OpenAIEmbedThrottledError):
        await embedded(embedder, TEXTS)
    assert len(fake_embeddings.requests) == 1 + 2


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_a_refused_request_fails_at_once(fake_embeddings: FakeEmbeddingsAPI, status: int) -> None:
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings, attempts=4)
    fake_embeddings.script(EmbedReply.error(status))
    with pytest.raises(OpenAIEmbedRequestError, match=f"HTTP {status}"):
        await embedded(embedder, TEXTS)
    assert len(fake_embeddings.requests) == 2


async def test_a_server_that_never_answers_times_out_on_every_attempt(fake_embeddings: FakeEmbeddingsAPI) -> None:
    sleeps = Sleeps()
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings, sleeps, attempts=2, timeout_s=0.05)
    fake_embeddings.script(EmbedReply(hang=True))  # answers only at teardown: the timeout ends it
    before = requests_counted("timeout")

    with pytest.raises(OpenAIEmbedTimeoutError):
        await embedded(embedder, TEXTS)

    assert fake_embeddings.hanging.is_set()
    assert len(fake_embeddings.requests) == 1 + 2 and len(sleeps) == 1
    assert requests_counted("timeout") == before + 2


async def test_an_unreachable_server_is_unavailable() -> None:
    options = OpenAIEmbedOptions(base_url=f"http://127.0.0.1:{free_port()}/v1", attempts=2)
    with pytest.raises(OpenAIEmbedUnavailableError, match="unreachable"):
        await asyncio.to_thread(OpenAIEmbedder.create, options, sleep=Sleeps())


@pytest.mark.parametrize("reply", [
    EmbedReply.raw("<html><body>502 Bad Gateway</body></html>", "text/html"),
    EmbedReply.raw({"detail": "no such route"}),
    EmbedReply.raw({"object": "list", "data": []}),
    EmbedReply.raw({"object": "list", "data": [{"index": 0, "embedding": "not numbers"}]}),
    EmbedReply.raw({"object": "list", "data": [{"index": 0, "embedding": [0.0] * DIM}]}),
    EmbedReply.raw({"object": "list", "data": [{"index": 0, "embedding": None}]}),
    EmbedReply.raw({"object": "list", "data": [{"index": 3, "embedding": [1.0] * DIM}]}),
    EmbedReply.raw({"object": "list", "data": [{"index": 0, "embedding": [[1.0], [2.0, 3.0]]}]}),
], ids=["html", "another-shape", "no-rows", "string", "zero", "null", "wrong-index", "ragged"])
async def test_a_garbage_answer_is_an_answer_error(fake_embeddings: FakeEmbeddingsAPI, reply: EmbedReply) -> None:
    embedder = await asyncio.to_thread(embedder_of, fake_embeddings)
    fake_embeddings.script(reply)
    before = requests_counted("invalid_answer")
    with pytest.raises(OpenAIEmbedAnswerError):
        await embedded(embedder, ["Ana has a dog."])
    assert requests_counted("invalid_answer") == before + 1
    assert len(fake_embeddings.requests) == 2, "not retried"


# --- the profile and the settings --------------------------------------------------------------

def test_openai_is_a_kind_whose_profile_is_uncalibrated() -> None:
    assert OPENAI in EMBEDDER_KINDS
    profile = openai_profile(MODEL, 768)
    assert (profile.name, profile.dim, profile.calibrated) == (f"openai:{MODEL}", 768, False)
    assert (profile.semantic_auto, profile.semantic_check_low) == (OPENAI_PROFILE.semantic_auto,
                                                                   OPENAI_PROFILE.semantic_check_low)
    with pytest.raises(EmbedderError, match="first answer"):
        profile_of(OPENAI)


def test_the_key_is_in_no_repr_nor_error() -> None:
    settings = Settings(embedder="openai", openai_api_key=KEY)
    assert KEY not in repr(openai_options(settings)) and KEY not in str(openai_options(settings))
    assert openai_options(settings).api_key == KEY


def test_the_embedder_uses_the_llms_server_and_key_unless_told_otherwise() -> None:
    llm = {"openai_base_url": "http://llm:8000/v1", "openai_api_key": "llm-key"}
    same = openai_options(Settings(embedder="openai", **llm))
    assert (same.base_url, same.api_key) == ("http://llm:8000/v1", "llm-key")
    other = openai_options(Settings(embedder="openai", openai_embed_base_url="http://emb:11434/v1",
                                    openai_embed_api_key="emb-key", openai_embed_batch_size=1,
                                    openai_embed_pool_tokens=True, openai_embed_attempts=2, **llm))
    assert (other.base_url, other.api_key, other.batch_size, other.pool_tokens, other.attempts) == (
        "http://emb:11434/v1", "emb-key", 1, True, 2)


async def test_the_settings_profile_asks_the_server_once(fake_embeddings: FakeEmbeddingsAPI) -> None:
    fake_embeddings.dim = 48
    settings = Settings(embedder="openai", openai_base_url=fake_embeddings.base_url, openai_embed_model=MODEL)
    first = await asyncio.to_thread(embedder_profile, settings)
    again = await asyncio.to_thread(embedder_profile, settings)
    assert first == again and (first.dim, first.calibrated) == (48, False)
    assert len(fake_embeddings.requests) == 1
    assert index_dimension(settings) == 48, "the S3 Vectors index takes the discovered dimension"


async def test_the_load_says_the_profile_is_uncalibrated_without_the_key(
    fake_embeddings: FakeEmbeddingsAPI, caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(embedder="openai", openai_base_url=fake_embeddings.base_url,
                        openai_api_key=KEY, openai_embed_model=MODEL)
    with caplog.at_level(logging.INFO):
        embedder = await asyncio.to_thread(build_embedder, settings)
    assert isinstance(embedder, OpenAIEmbedder)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("UNCALIBRATED" in m and "benchmarks.calibration" in m for m in warned)
    assert all(KEY not in r.getMessage() for r in caplog.records)
    assert Services(settings, embedder=embedder).profile().calibrated is False


def test_the_sdk_error_types_are_the_ones_mapped() -> None:
    """The mapping names the SDK's classes; an SDK release renaming one would break it silently."""
    for name in ("APITimeoutError", "APIConnectionError", "APIResponseValidationError", "APIStatusError"):
        assert isinstance(getattr(openai, name), type)


# --- a turn stored at the discovered dimension ----------------------------------------------------

async def test_a_turn_is_stored_and_found_at_the_servers_dimension(fake_embeddings: FakeEmbeddingsAPI, tmp_path) -> None:
    fake_embeddings.dim = 56
    settings = Settings(embedder="openai", openai_embed_base_url=fake_embeddings.base_url,
                        openai_embed_model=MODEL, llm_provider="none", table_store="memory://",
                        data_dir=tmp_path)
    embedder = await asyncio.to_thread(build_embedder, settings)
    pipeline = InProcessPipeline(settings, embedder)
    turn = Turn(user_id="ana", thread_id="t1", turn_id="1", role=Role.user, speaker="Ana",
                text="I adopted a dog named Luna yesterday.", ts=datetime(2023, 5, 8, 13, 56, tzinfo=UTC))

    await asyncio.wait_for(pipeline.ingest([turn]), HANG_GUARD_S)
    hits = await asyncio.wait_for(pipeline.query("ana", "What is the name of Ana's dog?", 5), HANG_GUARD_S)

    assert any("Luna" in hit.memory.summary for hit in hits), [h.memory.summary for h in hits]
    assert pipeline.services.profile().dim == 56
    assert len(fake_embeddings.requests) > 1, "the facts and the query were embedded by the server"
