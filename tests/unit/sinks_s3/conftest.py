"""Backends of the S3 Vectors tests: moto + our QueryVectors fake by default, the real service on
demand.

`backend` is parametrised: "moto" runs every test under `mock_aws` with fake credentials (moto
serves the CRUD calls over boto3's real request path; `InMemoryQueryVectors` answers QueryVectors,
which moto lacks) and a fake `bedrock-runtime` client that answers `invoke_model` like Titan V2
with a deterministic bag-of-words embedding (moto's Bedrock returns an empty body). "aws" runs
the same tests against S3 Vectors and Bedrock themselves when `MEMSTREAM_AWS_IT=1` and real
credentials are present (indexes are created per test in `MEMSTREAM_IT_S3V_BUCKET`, default
`memstream-it`, and deleted afterwards); otherwise it is skipped with the reason.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody

from sinks.s3vectors_client import Boto3VectorsClient, VectorsClient
from tests.fakes.s3vectors_query import InMemoryQueryVectors
from streams.memory.model import Memory
from streams.settings import Settings

REGION = os.environ.get("MEMSTREAM_IT_REGION", "us-east-1")
DIM = 256
"""The dimension of the tests' vectors: the smallest Titan V2 output (EMBEDDER=bedrock,
BEDROCK_EMBED_DIMENSIONS=256), which `Backend.settings` selects."""
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                    "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def _real_aws() -> bool:
    """Decided once, at import, before any test replaces the credentials with fake ones."""
    if os.environ.get("MEMSTREAM_AWS_IT") != "1":
        return False
    return boto3.session.Session().get_credentials() is not None


REAL_AWS = _real_aws()
AWS_SKIP = ("set MEMSTREAM_AWS_IT=1 with real AWS credentials to run against S3 Vectors and Bedrock"
            if os.environ.get("MEMSTREAM_AWS_IT") != "1" else "MEMSTREAM_AWS_IT=1 but no AWS credentials found")


@pytest.fixture(autouse=True)
def fake_aws_credentials(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and region for every test but the real-service ones: a call that escaped a
    mock could never reach an account."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("backend") == "aws":
        return
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(name, value)


# --- Titan V2 at the client boundary -----------------------------------------------------------

_STOP = {"a", "an", "the", "is", "are", "has", "have", "of", "to", "in", "on", "and", "what",
         "does", "do", "at", "as", "for", "with", "who", "her", "his", "named"}


def bag_of_words(text: str, dimension: int) -> list[float]:
    """A deterministic unit vector: texts sharing content words are close (cosine)."""
    vector = np.zeros(dimension, dtype=np.float64)
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word not in _STOP:
            vector[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % dimension] += 1.0
    if not vector.any():
        vector[0] = 1.0
    return (vector / np.linalg.norm(vector)).tolist()


class FakeBedrockRuntime:
    """A `bedrock-runtime` client whose `invoke_model` answers as Titan Text Embeddings V2 does
    (JSON body with `embedding` and `inputTextTokenCount` in a StreamingBody)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def invoke_model(self, *, modelId: str, body: str, contentType: str, accept: str) -> dict[str, Any]:
        assert modelId == "amazon.titan-embed-text-v2:0"
        assert contentType == accept == "application/json"
        request = json.loads(body)
        self.requests.append(request)
        payload = json.dumps({"embedding": bag_of_words(request["inputText"], request["dimensions"]),
                              "inputTextTokenCount": len(request["inputText"].split())}).encode()
        return {"body": StreamingBody(io.BytesIO(payload), len(payload)),
                "contentType": "application/json"}


# --- backends ---------------------------------------------------------------------------------

@dataclass
class Backend:
    """Where a test's vectors go. `client(index)` is one `VectorsClient` per index name."""

    name: str
    s3v: Any
    bedrock: Any
    bucket: str
    _clients: dict[str, VectorsClient] = field(default_factory=dict)

    def new_index(self) -> str:
        return f"it-{uuid4().hex[:16]}"

    def client(self, index: str) -> VectorsClient:
        if index not in self._clients:
            inner = Boto3VectorsClient(self.s3v, self.bucket, index)
            self._clients[index] = InMemoryQueryVectors(inner) if self.name == "moto" else inner
        return self._clients[index]

    def client_in_bucket(self, index: str) -> VectorsClient:
        """`client(index)` with its bucket created (the index is not)."""
        client = self.client(index)
        if not client.bucket_exists():
            client.create_bucket()
        return client

    def settings(self, index: str, **overrides: Any) -> Settings:
        values: dict[str, Any] = {"aws_region": REGION, "s3v_bucket": self.bucket,
                                  "s3v_index_memory": index, "s3v_distance": "cosine",
                                  "embedder": "bedrock", "bedrock_embed_dimensions": DIM}
        return Settings(**{**values, **overrides})

    def cleanup(self) -> None:
        if self.name != "aws":
            return
        for index in self._clients:
            try:
                self.s3v.delete_index(vectorBucketName=self.bucket, indexName=index)
            except self.s3v.exceptions.NotFoundException:
                pass


@pytest.fixture(params=["moto", pytest.param("aws", marks=pytest.mark.skipif(not REAL_AWS, reason=AWS_SKIP))])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "aws":
        found = Backend("aws", boto3.client("s3vectors", region_name=REGION),
                        boto3.client("bedrock-runtime", region_name=REGION),
                        os.environ.get("MEMSTREAM_IT_S3V_BUCKET", "memstream-it"))
        try:
            yield found
        finally:
            found.cleanup()
        return
    from moto import mock_aws

    with mock_aws():
        yield Backend("moto", boto3.client("s3vectors", region_name="us-east-1"),
                      FakeBedrockRuntime(), "memstream-test")


# --- memory documents -----------------------------------------------------------------------------

def embedding_b64(vector: Any) -> str:
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode()


def memory_document(memory_id: str, summary: str, *, user_id: str = "ana", dimension: int = DIM,
                    vector: Any = None, **fields: Any) -> dict[str, Any]:
    """A memory as the sink receives it: `Memory.model_dump(mode="json")` with its embedding."""
    if vector is None:
        vector = bag_of_words(summary, dimension)
    memory = Memory(id=memory_id, user_id=user_id, type=fields.pop("type", "semantic"),
                    summary=summary, created_at="2023-05-08T13:56:00Z",
                    updated_at=fields.pop("updated_at", "2023-05-08T13:56:00Z"),
                    last_accessed="2023-05-08T13:56:00Z", embedding_b64=embedding_b64(vector),
                    **fields)
    return memory.model_dump(mode="json")
