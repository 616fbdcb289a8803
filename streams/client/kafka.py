"""The client's Kafka side: an idempotent producer of turns, and a consumer of one topic.

aiokafka asks a broker for a producer id with InitProducerId v0 only. Brokers that expect the
v3+ fields (producer id and epoch, -1 for a new producer, as Kafka's own clients send since
Kafka 2.5) refuse it — the embedded Tansu broker does — so `idempotent_producer` first adds
v3 to the versions aiokafka may choose (`allow_init_producer_id_v3`). A broker that knows only
v0 still gets v0.

Both are made by `streams.kafka.security` (`kafka_producer`, `kafka_consumer`), as every Kafka
client of memstream is: their `start` runs the connection check first, bounded by
`connect_timeout`, and a broker that cannot be reached or refuses the TLS handshake or the login
is a `BrokerConnectionError` saying which step failed.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.producer import sender
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.transaction import InitProducerIdRequest_v0
from aiokafka.protocol.types import CompactString, Int16, Int32, Int64, Schema, TaggedFields

from streams.kafka.security import DEFAULT_CONNECT_TIMEOUT_S, kafka_consumer, kafka_producer

NEW_PRODUCER = -1
"""Producer id and epoch of a producer that has none yet (InitProducerId v3+)."""


class InitProducerIdResponse_v3(Response):
    API_KEY = 22
    API_VERSION = 3
    FLEXIBLE_VERSION = True
    SCHEMA = Schema(("throttle_time_ms", Int32), ("error_code", Int16), ("producer_id", Int64),
                    ("producer_epoch", Int16), ("tags", TaggedFields))


class InitProducerIdRequest_v3(RequestStruct):
    API_KEY = 22
    API_VERSION = 3
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = InitProducerIdResponse_v3
    SCHEMA = Schema(("transactional_id", CompactString("utf-8")), ("transaction_timeout_ms", Int32),
                    ("producer_id", Int64), ("producer_epoch", Int16), ("tags", TaggedFields))


class InitProducerIdRequest(Request[InitProducerIdRequest_v0 | InitProducerIdRequest_v3]):
    """aiokafka's InitProducerId request with v3 besides v0 (the highest both sides know wins)."""

    API_KEY = 22

    def __init__(self, transactional_id: str | None, transaction_timeout_ms: int) -> None:
        self._transactional_id = transactional_id
        self._transaction_timeout_ms = transaction_timeout_ms

    def build(self, request_struct_class: type[InitProducerIdRequest_v0 | InitProducerIdRequest_v3]
              ) -> InitProducerIdRequest_v0 | InitProducerIdRequest_v3:
        if request_struct_class.API_VERSION == 0:
            return request_struct_class(self._transactional_id, self._transaction_timeout_ms)
        return request_struct_class(self._transactional_id, self._transaction_timeout_ms,
                                    NEW_PRODUCER, NEW_PRODUCER, {})


def allow_init_producer_id_v3() -> None:
    """Let aiokafka's producers ask for a producer id with v3 when the broker knows it."""
    sender.InitProducerIdRequest = InitProducerIdRequest


def idempotent_producer(bootstrap: str, *, linger_ms: int, client_id: str,
                        security: Mapping[str, Any] | None = None,
                        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> AIOKafkaProducer:
    """A producer that loses and duplicates nothing on retries: every in-sync replica acks
    (`acks=all`), and the broker drops a retried batch it already has (idempotence). Batches
    fill for up to `linger_ms`. Records keep their order per partition. `security`: aiokafka's
    connection arguments (security_protocol, ssl_context, sasl_*); `connect_timeout`: the bound
    of the connection check its `start` runs first."""
    allow_init_producer_id_v3()
    return kafka_producer(bootstrap, connect_timeout=connect_timeout, client_id=client_id,
                          acks="all", enable_idempotence=True, linger_ms=linger_ms,
                          **(security or {}))


def topic_consumer(bootstrap: str, topic: str, *, group_id: str | None, from_beginning: bool,
                   client_id: str, security: Mapping[str, Any] | None = None,
                   connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> AIOKafkaConsumer:
    """A consumer of `topic` that commits nothing by itself (the caller commits what it
    handled, so a restart goes on from there: at least once). `security` and `connect_timeout`
    as for a producer."""
    return kafka_consumer(bootstrap, topic, connect_timeout=connect_timeout, group_id=group_id,
                          client_id=client_id, enable_auto_commit=False,
                          auto_offset_reset="earliest" if from_beginning else "latest",
                          **(security or {}))
