"""A local fake of an OpenAI-compatible `/v1/embeddings` server, for the real `openai` client.

Real HTTP on 127.0.0.1 (a free port, `serve_route` of the provider tests): the SDK's request
building, its error mapping and our retries are exercised. A text's vector is a bag of its words
hashed into `dim` buckets, so texts that share words are close (a query finds its memory) and
the same text always has the same vector. Replies are scripted in order, the last one repeating:
vectors (optionally of another dimension, shuffled, or one per token), an HTTP error, a hang
(answered only once `release` is set, at teardown at the latest), or a raw body.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from tests.unit.providers.conftest import serve_route

DIM = 24


def bag_of_words(text: str, dim: int = DIM) -> np.ndarray:
    """The fake's vector of `text` before normalisation (what the embedder must return, normalised)."""
    vector = np.zeros(dim, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
    if not vector.any():
        vector[0] = 1.0
    return vector


@dataclass(frozen=True)
class EmbedReply:
    """One scripted answer: vectors of `dim` (None: the server's), an error status, a hang, or a
    raw `body` (`content_type` text/html for an error page)."""

    dim: int | None = None
    status: int = 200
    hang: bool = False
    shuffled: bool = False
    per_token: bool = False
    body: str | None = None
    content_type: str = "application/json"

    @classmethod
    def error(cls, status: int) -> EmbedReply:
        return cls(status=status)

    @classmethod
    def raw(cls, payload: Any, content_type: str = "application/json") -> EmbedReply:
        return cls(body=payload if isinstance(payload, str) else json.dumps(payload), content_type=content_type)


@dataclass
class FakeEmbeddingsAPI:
    """`POST /v1/embeddings` (see the module docstring)."""

    base_url: str = ""
    dim: int = DIM
    replies: deque[EmbedReply] = field(default_factory=lambda: deque([EmbedReply()]))
    requests: list[dict[str, Any]] = field(default_factory=list)
    hanging: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def script(self, *replies: EmbedReply) -> None:
        self.replies = deque(replies)

    def inputs(self) -> list[list[str]]:
        """The texts of each request received."""
        return [r["body"]["input"] for r in self.requests]

    def _next(self) -> EmbedReply:
        return self.replies.popleft() if len(self.replies) > 1 else self.replies[0]

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"headers": {k.lower(): v for k, v in request.headers.items()}, "body": body})
        reply = self._next()
        if reply.hang:
            self.hanging.set()
            await self.release.wait()
        if reply.status != 200:
            return web.json_response({"error": {"message": "scripted failure", "type": "server_error"}},
                                     status=reply.status)
        if reply.body is not None:
            return web.Response(text=reply.body, content_type=reply.content_type)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dim = reply.dim or body.get("dimensions") or self.dim
        rows = []
        for index, text in enumerate(texts):
            vector = bag_of_words(text, dim)
            embedding: Any = ([(vector * 0.5).tolist(), (vector * 1.5).tolist()] if reply.per_token
                              else vector.tolist())
            rows.append({"object": "embedding", "index": index, "embedding": embedding})
        if reply.shuffled:
            rows.reverse()
        return web.json_response({"object": "list", "data": rows, "model": body.get("model", ""),
                                  "usage": {"prompt_tokens": 3 * len(texts), "total_tokens": 3 * len(texts)}})


@pytest.fixture
async def fake_embeddings() -> AsyncIterator[FakeEmbeddingsAPI]:
    fake = FakeEmbeddingsAPI()
    runner, url = await serve_route("/v1/embeddings", fake.handle)
    fake.base_url = f"{url}/v1"
    yield fake
    fake.release.set()
    await runner.cleanup()
