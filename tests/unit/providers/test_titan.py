"""The `bedrock` embedder (Titan Text Embeddings V2) over a real boto3 `bedrock-runtime` client,
stubbed at the client boundary: botocore's Stubber, or a fake `invoke_model` that checks the
request body. No sleeps: tenacity's sleep between attempts is a recorder."""
from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from streams.app.services import Services
from streams.settings import Settings
from streams.providers.embedders import EMBEDDER_KINDS, TITAN_V2_PROFILE, EmbedderError, profile_of
from streams.providers.embedders.configured import build_embedder, embedder_profile, titan_options
from streams.providers.embedders.titan import (
    TitanAnswerError,
    TitanOptions,
    TitanRequestError,
    TitanThrottledError,
    TitanTimeoutError,
    TitanUnavailableError,
    TitanV2Embedder,
    bedrock_runtime_client,
)

MODEL = "amazon.titan-embed-text-v2:0"


def titan_answer(embedding: list[float]) -> dict[str, Any]:
    payload = json.dumps({"embedding": embedding, "inputTextTokenCount": 4}).encode()
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


def request(text: str, dimensions: int = 256) -> dict[str, Any]:
    return {"modelId": MODEL, "contentType": "application/json", "accept": "application/json",
            "body": json.dumps({"inputText": text, "dimensions": dimensions, "normalize": True})}


def unit(index: int, dimensions: int = 256) -> list[float]:
    vector = [0.0] * dimensions
    vector[index % dimensions] = 1.0
    return vector


class Sleeps(list[float]):
    """tenacity's `sleep`: records the waits instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def client() -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def titan(client: Any, sleeps: Sleeps, **options: Any) -> TitanV2Embedder:
    return TitanV2Embedder(client, **{"dimensions": 256, "concurrency": 1, "attempts": 3, "sleep": sleeps,
                                      **options})


def test_one_text_is_one_request_with_titans_body(client: Any, stubber: Stubber, sleeps: Sleeps) -> None:
    stubber.add_response("invoke_model", titan_answer([0.6, 0.8] + [0.0] * 254), request("Ana has a dog."))
    vectors = titan(client, sleeps).embed(["Ana has a dog."])
    assert vectors.dtype == np.float32 and vectors.shape == (1, 256)
    assert vectors[0, :2].tolist() == pytest.approx([0.6, 0.8])
    assert sleeps == []


def test_a_batch_runs_one_call_per_text_concurrently_within_the_bound(sleeps: Sleeps) -> None:
    """Eight texts on a pool of four: the first four calls must all be in flight together (the
    barrier only opens for four), never more than four at once, and rows come back in order."""
    barrier = threading.Barrier(4, timeout=30)  # a hang guard: sequential calls would break it
    lock = threading.Lock()
    in_flight, peak, bodies = [0], [0], []

    class ConcurrentTitan:
        def invoke_model(self, *, modelId: str, body: str, contentType: str, accept: str) -> dict[str, Any]:
            assert (modelId, contentType, accept) == (MODEL, "application/json", "application/json")
            sent = json.loads(body)
            assert (sent["dimensions"], sent["normalize"]) == (256, True)
            with lock:
                bodies.append(sent)
                in_flight[0] += 1
                peak[0] = max(peak[0], in_flight[0])
            try:
                barrier.wait()
                return titan_answer(unit(int(sent["inputText"].split()[-1])))
            finally:
                with lock:
                    in_flight[0] -= 1

    embedder = TitanV2Embedder(ConcurrentTitan(), dimensions=256, concurrency=4, sleep=sleeps)
    try:
        vectors = embedder.embed([f"text {i}" for i in range(8)])
    finally:
        embedder.close()
    assert vectors.shape == (8, 256)
    assert [int(np.argmax(row)) for row in vectors] == list(range(8))
    assert sorted(b["inputText"] for b in bodies) == sorted(f"text {i}" for i in range(8))
    assert peak[0] == 4


def test_throttling_is_retried_with_backoff_then_succeeds(client: Any, stubber: Stubber, sleeps: Sleeps) -> None:
    stubber.add_client_error("invoke_model", "ThrottlingException", "slow down", 429,
                             expected_params=request("Ana has a dog."))
    stubber.add_client_error("invoke_model", "ServiceUnavailableException", "busy", 503,
                             expected_params=request("Ana has a dog."))
    stubber.add_response("invoke_model", titan_answer(unit(3)), request("Ana has a dog."))

    vectors = titan(client, sleeps, backoff_initial_s=0.1, backoff_max_s=5.0).embed(["Ana has a dog."])

    assert int(np.argmax(vectors[0])) == 3
    assert len(sleeps) == 2 and all(0 <= s <= 5.0 for s in sleeps)


def test_throttled_on_every_attempt_is_a_named_error(client: Any, stubber: Stubber, sleeps: Sleeps) -> None:
    for _ in range(3):
        stubber.add_client_error("invoke_model", "ThrottlingException", "slow down", 429)
    with pytest.raises(TitanThrottledError, match="ThrottlingException"):
        titan(client, sleeps).embed(["Ana has a dog."])
    assert len(sleeps) == 2


def test_server_errors_on_every_attempt_are_unavailable(client: Any, stubber: Stubber, sleeps: Sleeps) -> None:
    for _ in range(3):
        stubber.add_client_error("invoke_model", "InternalServerException", "oops", 500)
    with pytest.raises(TitanUnavailableError, match="InternalServerException"):
        titan(client, sleeps).embed(["Ana has a dog."])


def test_timeouts_are_retried_then_named(sleeps: Sleeps) -> None:
    calls: list[str] = []

    class SlowTitan:
        def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
            calls.append(json.loads(kwargs["body"])["inputText"])
            raise ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    with pytest.raises(TitanTimeoutError, match="ReadTimeoutError") as raised:
        titan(SlowTitan(), sleeps).embed(["Ana has a dog."])
    assert isinstance(raised.value, EmbedderError)
    assert calls == ["Ana has a dog."] * 3 and len(sleeps) == 2


def test_a_refused_request_fails_at_once(client: Any, stubber: Stubber, sleeps: Sleeps) -> None:
    stubber.add_client_error("invoke_model", "ValidationException", "bad input", 400)
    with pytest.raises(TitanRequestError, match="ValidationException"):
        titan(client, sleeps).embed(["Ana has a dog."])
    assert sleeps == []


def test_one_failed_text_fails_the_batch(sleeps: Sleeps) -> None:
    class HalfBroken:
        def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
            text = json.loads(kwargs["body"])["inputText"]
            if text == "bad":
                raise ClientError({"Error": {"Code": "AccessDeniedException"},
                                   "ResponseMetadata": {"HTTPStatusCode": 403}}, "InvokeModel")
            return titan_answer(unit(1))

    embedder = TitanV2Embedder(HalfBroken(), dimensions=256, concurrency=2, sleep=sleeps)
    try:
        with pytest.raises(TitanRequestError, match="AccessDeniedException"):
            embedder.embed(["good", "bad", "good"])
    finally:
        embedder.close()


@pytest.mark.parametrize(("answer", "reason"), [
    (titan_answer([0.5] * 255), "no embedding of 256 numbers"),
    (titan_answer([0.0] * 256), "zero or not finite"),
    ({"body": StreamingBody(io.BytesIO(b"<html>"), 6), "contentType": "text/html"}, "not JSON"),
])
def test_a_bad_answer_is_named(client: Any, stubber: Stubber, sleeps: Sleeps, answer: dict, reason: str) -> None:
    stubber.add_response("invoke_model", answer)
    with pytest.raises(TitanAnswerError, match=reason):
        titan(client, sleeps).embed(["Ana has a dog."])


def test_empty_texts_are_refused_before_any_call(sleeps: Sleeps) -> None:
    with pytest.raises(TitanRequestError, match="empty text"):
        titan(object(), sleeps).embed(["Ana", "  "])
    assert titan(object(), sleeps).embed([]).shape == (0, 256)


def test_long_texts_are_cut_to_titans_limit(client: Any, stubber: Stubber, sleeps: Sleeps) -> None:
    stubber.add_response("invoke_model", titan_answer(unit(0)), request("x" * 50_000))
    titan(client, sleeps).embed(["x" * 60_000])


def test_dimensions_are_titans() -> None:
    with pytest.raises(EmbedderError, match="not 384"):
        TitanV2Embedder(object(), dimensions=384)


def test_the_client_has_our_timeouts_and_no_retries_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = bedrock_runtime_client(TitanOptions(connect_timeout_s=1.5, read_timeout_s=7.0, concurrency=16))
    config = client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (1.5, 7.0)
    assert config.retries["total_max_attempts"] == 1
    assert config.max_pool_connections == 16


# --- chosen by the settings -------------------------------------------------------------------

def bedrock_settings(**values: Any) -> Settings:
    return Settings(embedder="bedrock", **values)


def test_bedrock_is_an_embedder_kind_with_titans_profile() -> None:
    assert "bedrock" in EMBEDDER_KINDS
    assert profile_of("bedrock") == TITAN_V2_PROFILE
    profile = embedder_profile(bedrock_settings(bedrock_embed_dimensions=512))
    assert (profile.name, profile.dim) == (MODEL, 512)
    # seed 002's bands, not MiniLM's
    assert (profile.semantic_auto, profile.semantic_check_low, profile.episodic_auto,
            profile.episodic_check_low) == (0.90, 0.80, 0.92, 0.85)


def test_the_worker_uses_titans_bands_when_bedrock_is_the_embedder() -> None:
    services = Services(bedrock_settings())  # nothing is loaded, no client is made
    assert services.dedup_config().profile == TITAN_V2_PROFILE


def test_the_settings_build_the_embedder(client: Any, stubber: Stubber) -> None:
    settings = bedrock_settings(bedrock_embed_dimensions=512, bedrock_embed_concurrency=3,
                                bedrock_embed_attempts=2, bedrock_embed_read_timeout_seconds=4)
    options = titan_options(settings)
    assert (options.dimensions, options.concurrency, options.attempts, options.read_timeout_s) == (512, 3, 2, 4.0)
    embedder = build_embedder(settings, bedrock_client=client)
    assert isinstance(embedder, TitanV2Embedder) and embedder.profile.dim == 512
    stubber.add_response("invoke_model", titan_answer(unit(7, 512)), request("Ana has a dog.", 512))
    assert embedder.embed(["Ana has a dog."]).shape == (1, 512)


async def test_services_embed_with_titan_off_the_event_loop(client: Any, stubber: Stubber) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    class Recording:
        def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
            threads.append(threading.get_ident())
            return client.invoke_model(**kwargs)

    stubber.add_response("invoke_model", titan_answer(unit(2)), request("Ana has a dog."))
    services = Services(bedrock_settings(bedrock_embed_dimensions=256),
                        embedder=TitanV2Embedder(Recording(), dimensions=256))
    vectors = await services.embed(["Ana has a dog."])
    assert vectors.shape == (1, 256) and int(np.argmax(vectors[0])) == 2
    assert threads and loop_thread not in threads
