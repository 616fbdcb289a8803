"""Issue 48, finding 11: every Kafka client memstream makes fails within
KAFKA_CONNECT_TIMEOUT_SECONDS with a `BrokerConnectionError`, and KAFKA_BROKER_URL is checked
when the settings are read (streams/settings/kafka.py, streams/kafka/security.py).

The broker here is a port that accepts TCP (the kernel completes the handshake for a listening
socket) and never answers: what a TLS client meets on a plaintext listener. No duration is
asserted: the error's message says which bound ended the wait; GUARD_S only guards a hang."""
from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from streams.kafka.security import (
    BrokerConnectionError,
    bootstrap_servers,
    check_connection,
    kafka_consumer,
    kafka_producer,
)
from streams.settings import KafkaSettings, Settings

GUARD_S = 120
"""A guard against a hang (aiokafka's own retries wait 40 s and more), never a measure."""


def tls() -> dict[str, object]:
    """A TLS client's connection arguments (the system's CAs)."""
    return {"security_protocol": "SSL", "ssl_context": ssl.create_default_context()}


@pytest.fixture
def silent() -> Iterator[str]:
    """host:port of a listener that never accepts nor answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.parametrize("bad, why", [
    ("host:abc", "the port 'abc' is not a number"),
    (":9092", "no host before the port"),
    (",", "an empty entry"),
    ("b-1.example:9096,", "an empty entry"),
    ("host:0", "the port '0' is not a number from 1 to 65535"),
    ("host:65536", "the port '65536' is not a number from 1 to 65535"),
    ("host name:9092", "'host name' is not a host name"),
    ("[not-ipv6]:9092", "not an IPv6 address in []"),
    ("SASL_SSL://b-1.example:9096", "no URL scheme but kafka://"),
])
def test_kafka_broker_url_is_checked_when_the_settings_are_read(bad, why) -> None:
    with pytest.raises(ValidationError) as raised:
        KafkaSettings(kafka_broker_url=bad)
    message = str(raised.value)
    assert f"KAFKA_BROKER_URL={bad!r}" in message and why in message


def test_a_login_in_the_broker_url_is_never_shown(monkeypatch) -> None:
    monkeypatch.setenv("KAFKA_BROKER_URL", "memstream:hunter2@b-1.example:9096")
    with pytest.raises(ValidationError) as raised:
        Settings()
    assert "hunter2" not in str(raised.value) and "memstream:" not in str(raised.value)
    assert "****@b-1.example:9096" in str(raised.value)


@pytest.mark.parametrize("good, servers", [
    ("b-1.example:9096, b-2.example:9096", [("b-1.example", 9096), ("b-2.example", 9096)]),
    ("kafka://kafka", [("kafka", 9092)]),
    ("[::1]:9093", [("::1", 9093)]),
    ("::1", [("::1", 9092)]),
    ("10.0.0.7:65535", [("10.0.0.7", 65535)]),
])
def test_good_bootstrap_lists_are_taken_as_they_are(good, servers) -> None:
    assert KafkaSettings(kafka_broker_url=good).kafka_broker_url == good
    assert bootstrap_servers(good) == servers


def test_an_empty_broker_url_is_the_embedded_broker() -> None:
    for empty in ("", "  "):
        assert KafkaSettings(kafka_broker_url=empty).broker_is_embedded


async def test_a_bad_bootstrap_list_given_by_hand_is_a_named_error() -> None:
    """`--broker host:abc` does not go through the settings: the check names it."""
    with pytest.raises(BrokerConnectionError, match="not a list of bootstrap servers.*'host:abc'"):
        await check_connection("host:abc", {"security_protocol": "PLAINTEXT"}, 0.5)
    with pytest.raises(BrokerConnectionError, match="the port '99999'"):
        await kafka_producer("localhost:99999", connect_timeout=0.5).start()


async def test_a_producer_checks_the_connection_before_it_starts(silent) -> None:
    producer = kafka_producer(silent, connect_timeout=0.5, acks="all", **tls())
    with pytest.raises(BrokerConnectionError, match=f"no answer from {silent} within 0.5s .*SSL"):
        await asyncio.wait_for(producer.start(), GUARD_S)
    assert producer._closed  # it holds no connection


async def test_a_consumer_checks_the_connection_before_it_starts(silent) -> None:
    consumer = kafka_consumer(silent, "memory.events", connect_timeout=0.5,
                              enable_auto_commit=False, **tls())
    with pytest.raises(BrokerConnectionError, match=f"no answer from {silent} within 0.5s"):
        await asyncio.wait_for(consumer.start(), GUARD_S)
    assert consumer._closed


async def test_every_bootstrap_server_is_tried_each_within_the_timeout(silent) -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    closed = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    server.close()
    await server.wait_closed()
    with pytest.raises(BrokerConnectionError,
                       match=f"no answer from {silent} within 0.5s.*and 1 more bootstrap servers failed"):
        await asyncio.wait_for(check_connection(f"{silent},{closed}", tls(), 0.5), GUARD_S)
