"""Issue 48, finding 11: the client library (`streams.client`, async and blocking) fails within
its `connect_timeout` (KAFKA_CONNECT_TIMEOUT_SECONDS with `from_settings`) when the broker never
answers: a `ProduceError` or `ConsumeError` whose cause is the `BrokerConnectionError` saying
which step failed, not a wait of aiokafka's retries (nor of the HTTP `timeout`).

The broker is a listener that never answers (a TLS client on a plaintext listener waits so).
No duration is asserted; GUARD_S only guards a hang."""
from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterator

import pytest

from streams.client import AsyncMemstreamClient, ConsumeError, MemstreamClient, ProduceError, Turn
from streams.kafka.security import BrokerConnectionError
from streams.settings import Settings

GUARD_S = 120
"""A guard against a hang, never a measure; also the client's HTTP `timeout`, which the
connection check does not wait out."""
TURN = Turn(user_id="ana", thread_id="t1", turn_id="1", role="user", text="hi",  # type: ignore[arg-type]
            ts="2024-05-01T10:00:00+00:00")


def tls() -> dict[str, object]:
    return {"security_protocol": "SSL", "ssl_context": ssl.create_default_context()}


@pytest.fixture
def silent() -> Iterator[str]:
    """host:port of a listener that never accepts nor answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def named(raised: pytest.ExceptionInfo[BaseException], silent: str, timeout: str) -> None:
    assert isinstance(raised.value.__cause__, BrokerConnectionError)
    assert f"no answer from {silent} within {timeout}s (KAFKA_CONNECT_TIMEOUT_SECONDS)" in str(raised.value)


async def test_send_fails_within_the_connect_timeout(silent) -> None:
    async with AsyncMemstreamClient(silent, kafka_security=tls(), connect_timeout=0.5,
                                    timeout=GUARD_S) as client:
        with pytest.raises(ProduceError) as raised:
            await asyncio.wait_for(client.send_turn(TURN), GUARD_S)
    named(raised, silent, "0.5")


async def test_proactivity_fails_within_the_connect_timeout(silent) -> None:
    async with AsyncMemstreamClient(silent, kafka_security=tls(), connect_timeout=0.5,
                                    timeout=GUARD_S) as client:
        with pytest.raises(ConsumeError) as raised:
            await asyncio.wait_for(client.proactivity().__anext__(), GUARD_S)
    named(raised, silent, "0.5")


async def test_from_settings_takes_kafka_connect_timeout_seconds(silent) -> None:
    settings = Settings(kafka_broker_url=silent, kafka_security_protocol="SSL",
                        kafka_connect_timeout_seconds=0.5)
    async with AsyncMemstreamClient.from_settings(settings, timeout=GUARD_S) as client:
        assert client.connect_timeout == 0.5
        with pytest.raises(ProduceError) as raised:
            await asyncio.wait_for(client.send_turn(TURN), GUARD_S)
    named(raised, silent, "0.5")


def test_the_blocking_client_fails_the_same(silent) -> None:
    with MemstreamClient(silent, kafka_security=tls(), connect_timeout=0.5, timeout=GUARD_S) as client:
        with pytest.raises(ProduceError) as raised:
            client.send_turn(TURN)
        named(raised, silent, "0.5")
        with pytest.raises(ConsumeError) as raised:
            next(iter(client.proactivity()))
        named(raised, silent, "0.5")
