"""Settings of one concern: kafka, topics and the worker (docs/configuration.md#kafka)."""
from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from streams.settings.section import Section

DEFAULT_KAFKA_PORT = 9092
"""The port of a bootstrap server given without one."""
DEFAULT_CONNECT_TIMEOUT_SECONDS = 15.0
"""KAFKA_CONNECT_TIMEOUT_SECONDS unset (and the client library's `connect_timeout` not given)."""
_HOST = re.compile(r"[A-Za-z0-9_.-]+")
"""A host name or an IPv4 address (IPv6 addresses are checked by `ipaddress`)."""
_USERINFO = re.compile(r"[^,/@]*@")


def masked(bootstrap: str) -> str:
    """A bootstrap list fit for an error message: what stands before an `@` (a login pasted into
    a URL, `user:password@host`) is `****`."""
    return _USERINFO.sub("****@", bootstrap)


def bootstrap_servers(bootstrap: str) -> list[tuple[str, int]]:
    """(host, port) of each server of a bootstrap list: `host:port,host:port`, an IPv6 address in
    [] (or bare, without a port), an optional `kafka://` before each, port 9092 when none is
    given. A blank list is no server; an entry that is none is a ValueError saying which and why
    (never with what stands before an `@`)."""
    if not bootstrap.strip():
        return []
    servers = []
    for item in (entry.strip() for entry in bootstrap.split(",")):
        server = item.removeprefix("kafka://")
        if not server:
            raise ValueError("an empty entry")
        servers.append(_server(server, masked(item)))
    return servers


def _server(item: str, shown: str) -> tuple[str, int]:
    """(host, port) of one entry of a bootstrap list; `shown`: how an error names it."""
    if "://" in item:
        raise ValueError(f"{shown!r}: no URL scheme but kafka:// (KAFKA_SECURITY_PROTOCOL says "
                         "how to connect)")
    if _ipv6(item):  # bare, without a port (as aiokafka reads one)
        return item, DEFAULT_KAFKA_PORT
    if item.startswith("["):
        address, bracket, rest = item[1:].partition("]")
        if not bracket or not _ipv6(address) or (rest and not rest.startswith(":")):
            raise ValueError(f"{shown!r}: not an IPv6 address in [] (as [::1]:9092)")
        return address, _port(rest[1:], shown) if rest else DEFAULT_KAFKA_PORT
    host, colon, port = item.rpartition(":")
    if not colon:
        host = item
    if not host:
        raise ValueError(f"{shown!r}: no host before the port")
    if not _HOST.fullmatch(host):
        raise ValueError(f"{shown!r}: {masked(host)!r} is not a host name or an IP address")
    return host, _port(port, shown) if colon else DEFAULT_KAFKA_PORT


def _ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _port(port: str, shown: str) -> int:
    if not re.fullmatch(r"[0-9]{1,5}", port) or not 1 <= int(port) <= 65535:
        raise ValueError(f"{shown!r}: the port {port!r} is not a number from 1 to 65535")
    return int(port)


class KafkaSettings(Section):
    """Kafka, topics and the worker."""

    model_config = SettingsConfigDict(hide_input_in_errors=True)
    """An error names the setting and says what is wrong, without echoing the value given (a
    broker URL may carry a login): `kafka_broker_url`'s says which entry, masked."""

    title: ClassVar[str] = "Kafka, topics and the worker"
    about: ClassVar[str] = (
        "Where the broker is, how the worker's clients talk to it, and where the worker keeps its "
        'tables. TLS and SASL for a managed Kafka: [kafka-security.md](kafka-security.md).'
    )

    kafka_broker_url: str | None = Field(
        None, description="Kafka bootstrap servers (host:port,...; port 9092 when none, IPv6 in []), "
        "checked when the settings are read. Unset or empty: start the embedded broker."
    )
    app_id: str = Field("memstream", description="Faust app id (consumer group, table prefix).")
    topic_partitions: int = Field(4, ge=1, description="Partition count of every topic.")
    data_dir: Path = Field(Path(".memstream"), description="RocksDB tables and worker state.")
    embedded_broker_port: int = Field(9092, description="Port of the embedded broker.")
    table_store: str = Field("rocksdb://", description="Faust table store (rocksdb:// or memory://).")
    table_memory_mb: int = Field(
        256, ge=16,
        description="RocksDB's memory in a worker, every table and partition together: one block "
        "cache, with the memtables charged to it and flushed when they pass half of it. Faust's "
        "own default gives each table's partition a 2 GB cache and up to 192 MB of memtables.",
    )
    kafka_one_record_batches: bool = Field(
        False,
        description="Produce one record per batch (slow). Only for a broker whose ListOffsets "
        "answer is wrong after multi-record batches and whose fetch high watermark is wrong too; "
        "the embedded Tansu broker's low answer is corrected from a fetch (streams/kafka/highwaters.py).",
    )
    kafka_producer_linger_ms: int = Field(
        10, ge=0, le=1000,
        description="How long a worker's producer waits to fill a batch before sending it. A "
        "turn makes about a dozen records (changelogs, events, progress): a few ms puts them "
        "in a few requests instead of one each (the embedded broker used a quarter less CPU "
        "per turn at 10 ms); it adds at most this much per topic a turn crosses.",
    )
    kafka_producer_compression: Literal["zstd", "lz4", "gzip", "snappy", "none"] = Field(
        "zstd",
        description="How a worker's producer compresses its record batches. Every Kafka client "
        "decompresses them by itself, so `memory.events` stays plain JSON to any consumer while "
        "its repeated field names and ids cost little at the broker; zstd needs Kafka 2.1 or "
        "later (the embedded broker has it), `none` for an older broker.",
    )
    kafka_fetch_max_wait_ms: int = Field(
        100, ge=1, le=1500,
        description="Longest a worker's fetch waits for records. The embedded broker answers a "
        "fetch only when this wait is over, so it adds up to this much per topic a turn crosses; "
        "Faust's own default is 1500.",
    )
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT",
        description="How memstream's Kafka clients (the worker, topic creation, `memstream send` "
        "and `replay`, the bench, the client library) talk to KAFKA_BROKER_URL: SSL is TLS, "
        "SASL_SSL TLS plus a SASL login (MSK, Confluent Cloud, Aiven: docs/kafka-security.md). "
        "The embedded broker speaks PLAINTEXT only.",
    )
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] = Field(
        "PLAIN", description="SASL mechanism with SASL_PLAINTEXT or SASL_SSL. PLAIN and SCRAM "
        "log in with KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD; OAUTHBEARER with the tokens of "
        "KAFKA_SASL_OAUTH_TOKEN_PROVIDER.",
    )
    kafka_sasl_username: str | None = Field(None, description="SASL user name (PLAIN, SCRAM).")
    kafka_sasl_password: SecretStr | None = Field(None, description="SASL password (PLAIN, SCRAM).")
    kafka_sasl_oauth_token_provider: str | None = Field(
        None, description="With OAUTHBEARER: `module:attribute` of an aiokafka "
        "AbstractTokenProvider (a class or factory called without arguments, or an instance), "
        "e.g. one returning MSK IAM tokens (docs/kafka-security.md).",
    )
    kafka_ssl_cafile: Path | None = Field(
        None, description="PEM file of the CA certificates that sign the brokers' certificates; "
        "unset: the system's CAs (enough for MSK, Confluent Cloud).",
    )
    kafka_ssl_certfile: Path | None = Field(
        None, description="PEM client certificate (mutual TLS, e.g. Aiven, MSK with TLS client "
        "authentication); with KAFKA_SSL_KEYFILE unless the key is in this file.",
    )
    kafka_ssl_keyfile: Path | None = Field(None, description="PEM private key of KAFKA_SSL_CERTFILE.")
    kafka_ssl_key_password: SecretStr | None = Field(
        None, description="Password of an encrypted KAFKA_SSL_KEYFILE.",
    )
    kafka_connect_timeout_seconds: float = Field(
        DEFAULT_CONNECT_TIMEOUT_SECONDS, gt=0, description="Longest the connection check before "
        "a worker, topic admin or any other Kafka client (the CLI, the bench, the client library, "
        "the LangGraph store) starts may spend on one bootstrap server (TCP, TLS handshake, SASL "
        "login, a Metadata request); past it, or on a refused certificate or login, it fails with "
        "BrokerConnectionError saying which step failed.",
    )

    @field_validator("kafka_broker_url")
    @classmethod
    def _a_bootstrap_list(cls, value: str | None) -> str | None:
        """Each entry a host and a port in range; empty: unset (the embedded broker)."""
        if value is None or not value.strip():
            return None
        try:
            bootstrap_servers(value)
        except ValueError as exc:
            raise ValueError(f"KAFKA_BROKER_URL={masked(value)!r} is not a list of Kafka bootstrap "
                             f"servers (host:port,...): {exc}") from None
        return value

    @property
    def broker_is_embedded(self) -> bool:
        """No KAFKA_BROKER_URL: the worker starts the embedded broker."""
        return not self.kafka_broker_url

    @property
    def broker_url(self) -> str:
        """The bootstrap servers actually used (embedded broker when none is configured)."""
        return self.kafka_broker_url or f"127.0.0.1:{self.embedded_broker_port}"
