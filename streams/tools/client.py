"""Helpers of the tools, tests and benchmarks around a running memstream: produce turns (the
bench's producer: idempotence off, no linger), read topics, query over HTTP. Applications use
memstream's client, `streams.client`.

Producers and consumers connect as `security` says (aiokafka's security_protocol, ssl_context,
sasl_* arguments); by default as the process's settings say (KAFKA_SECURITY_PROTOCOL, ...:
`streams.kafka.security.client_kwargs`). Every one is made by `make_producer` or
`make_consumer`: its `start` runs the connection check first, within KAFKA_CONNECT_TIMEOUT_SECONDS,
so a broker that does not answer (a TLS client on a plaintext listener), or refuses the TLS
handshake or the login, is a `BrokerConnectionError` saying which step failed, not a wait of
aiokafka's retries."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, AsyncIterator, Iterable

import aiohttp
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streams.errors import ApiError
from topics.deflated import inflated
from topics.names import CHAT_TURNS
from topics.turns import Turn


def kafka_security(security: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`security`, or the connection arguments of the process's settings when None."""
    if security is not None:
        return dict(security)
    from streams.kafka.security import client_kwargs
    from streams.settings import get_settings

    return client_kwargs(get_settings().kafka)


def kafka_connect_timeout(timeout: float | None = None) -> float:
    """`timeout`, or the process's KAFKA_CONNECT_TIMEOUT_SECONDS when None."""
    if timeout is not None:
        return timeout
    from streams.settings import get_settings

    return get_settings().kafka.kafka_connect_timeout_seconds


def make_producer(bootstrap: str, one_record_batches: bool = False,
                  security: Mapping[str, Any] | None = None,
                  connect_timeout: float | None = None) -> AIOKafkaProducer:
    """A producer keyed by user_id; one record per batch only if asked (KAFKA_ONE_RECORD_BATCHES).
    Its `start` checks the connection first, within `connect_timeout` seconds (default:
    KAFKA_CONNECT_TIMEOUT_SECONDS)."""
    from streams.kafka.security import kafka_producer

    return kafka_producer(
        bootstrap, connect_timeout=kafka_connect_timeout(connect_timeout),
        max_batch_size=1 if one_record_batches else 16384, linger_ms=0, acks="all",
        enable_idempotence=False, **kafka_security(security),
    )


def make_consumer(bootstrap: str, *topics: str, security: Mapping[str, Any] | None = None,
                  connect_timeout: float | None = None, **options: Any) -> AIOKafkaConsumer:
    """A consumer of `topics` (none: assigned later) with aiokafka's `options`, connected as
    `security` (default: the settings) says; its `start` checks the connection first, within
    `connect_timeout` seconds (default: KAFKA_CONNECT_TIMEOUT_SECONDS)."""
    from streams.kafka.security import kafka_consumer

    return kafka_consumer(bootstrap, *topics, connect_timeout=kafka_connect_timeout(connect_timeout),
                          **kafka_security(security), **options)


class TurnProducer:
    """Produces turns to `chat.turns`, keyed by user_id. Use `async with`."""

    def __init__(self, bootstrap: str, one_record_batches: bool = False,
                 security: Mapping[str, Any] | None = None,
                 connect_timeout: float | None = None) -> None:
        self._producer = make_producer(bootstrap, one_record_batches, security, connect_timeout)

    async def __aenter__(self) -> "TurnProducer":
        await self._producer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._producer.stop()

    async def send_turn(self, turn: Turn) -> Any:
        """Queue one turn; returns the future of its delivery."""
        return await self._producer.send(
            CHAT_TURNS, key=turn.user_id.encode(), value=turn.model_dump_json().encode()
        )

    async def send_raw(self, key: bytes | None, value: bytes, topic: str = CHAT_TURNS) -> Any:
        return await self._producer.send(topic, key=key, value=value)

    async def flush(self) -> None:
        await self._producer.flush()


async def read_topic(
    bootstrap: str, topic: str, *, from_beginning: bool = True, group_id: str | None = None,
    security: Mapping[str, Any] | None = None, connect_timeout: float | None = None,
) -> AsyncIterator[tuple[bytes | None, Any]]:
    """Yield (key, JSON value) from `topic` forever, a deflated record (`topics.deflated`:
    `memory.progress`, `memory.events` as written before) inflated; records that are not JSON
    are skipped."""
    consumer = make_consumer(
        bootstrap, topic, security=security, connect_timeout=connect_timeout, group_id=group_id,
        enable_auto_commit=False, auto_offset_reset="earliest" if from_beginning else "latest",
    )
    await consumer.start()
    try:
        async for message in consumer:
            try:
                yield message.key, json.loads(inflated(message.value or b""))
            except (TypeError, ValueError):  # DeflatedRecordError is a ValueError
                continue
    finally:
        await consumer.stop()


class ApiClient:
    """HTTP client of the worker's API."""

    def __init__(self, base_url: str, timeout: float = 30.0, api_key: str | None = None) -> None:
        """`api_key` defaults to MEMSTREAM_API_KEY, else the key `memstream run` wrote."""
        from streams.api.auth import client_key
        from streams.settings import get_settings

        key = api_key or client_key(get_settings())
        self.base_url = base_url.rstrip("/")
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=timeout),
            headers={"Authorization": f"Bearer {key}"} if key else None,
        )

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> "ApiClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        async with self._session.request(method, self.base_url + path, **kwargs) as response:
            body = await response.text()
            if response.status != 200:
                raise ApiError(f"{method} {path} -> {response.status}: {body[:300]}")
            return json.loads(body)

    async def _get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._call("GET", path, params=params)

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._call("POST", path, json=body)

    async def memory_query(self, user_id: str, request: dict[str, Any]) -> dict[str, Any]:
        """POST one `memory.query` request (`topics.query.QueryRequest` fields); the whole answer."""
        return await self._post(f"/v1/users/{user_id}/query", request)

    async def query(self, user_id: str, text: str, top_k: int = 10, *, agent: str = "supervisor",
                    **fields: Any) -> list[dict[str, Any]]:
        """The items (`return: full`) of a query as `agent`; `fields` adds request fields."""
        data = await self.memory_query(
            user_id, {"agent": agent, "query": text, "top_k": top_k, "return": "full", **fields})
        return data["items"]

    async def memories(self, user_id: str) -> list[dict[str, Any]]:
        return (await self._get(f"/v1/users/{user_id}/memories"))["items"]

    async def health(self) -> dict[str, Any]:
        return await self._get("/health")


def turns_from_dicts(rows: Iterable[dict[str, Any]]) -> Iterable[Turn]:
    for row in rows:
        yield Turn.model_validate(row)
