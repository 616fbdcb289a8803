"""Settings of one concern: kafka, topics and the worker (docs/configuration.md#kafka)."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, SecretStr

from streams.settings.section import Section


class KafkaSettings(Section):
    """Kafka, topics and the worker."""

    title: ClassVar[str] = "Kafka, topics and the worker"
    about: ClassVar[str] = (
        "Where the broker is, how the worker's clients talk to it, and where the worker keeps its "
        'tables. TLS and SASL for a managed Kafka: [kafka-security.md](kafka-security.md).'
    )

    kafka_broker_url: str | None = Field(
        None, description="Kafka bootstrap servers (host:port,...). Unset: start the embedded broker."
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
        15.0, gt=0, description="Longest the connection check before a worker, topic admin or "
        "client starts may take (TCP, TLS handshake, SASL login); past it, or on a refused "
        "certificate or login, it fails with BrokerConnectionError saying which step failed.",
    )

    @property
    def broker_is_embedded(self) -> bool:
        """No KAFKA_BROKER_URL: the worker starts the embedded broker."""
        return not self.kafka_broker_url

    @property
    def broker_url(self) -> str:
        """The bootstrap servers actually used (embedded broker when none is configured)."""
        return self.kafka_broker_url or f"127.0.0.1:{self.embedded_broker_port}"
