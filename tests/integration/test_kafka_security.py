"""Kafka over TLS, and SASL refusals (streams/kafka/security.py), against the embedded broker
behind stunnel.

Tansu 0.6 has no TLS of its own (its --cert/--key options are dead), so stunnel terminates TLS
in front of it with a certificate of a CA made here, and the broker advertises stunnel's port:
every connection, the bootstrap and the reconnections to the advertised address, goes through
TLS. The whole pipeline runs so: topic admin, a worker (Faust), `memstream send`, the client
library's producer and consumer, the tools' consumer.

Tansu does require a SASL login when asked (--authentication), but keeps no SCRAM users with
memory storage and validates no OAUTHBEARER token (and offers no PLAIN), so it refuses every
login: here only refusals are run end to end (over TLS); what a successful login sends is
checked at the unit level (tests/unit/app/test_kafka_security.py).

No timing is asserted: each failure is an error the call returns; GUARD_S only guards a hang.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka.abc import AbstractTokenProvider
from typer.testing import CliRunner

from streams.kafka.security import BrokerConnectionError, client_kwargs
from streams.settings import Settings, get_settings
from streams.app.topic_admin import create_topics, started_admin
from streams.client import AsyncMemstreamClient, MemoryEvent, ProduceError, ProactivityCandidate
from streams.tools.stack import start_worker
from streams.cli import main as cli
from streams.tools.broker import EmbeddedBroker, free_port
from streams.tools.client import read_topic
from tests.fakes.tls import STUNNEL, Certs, Stunnel, make_certs
from tests.integration.conftest import (
    ADMIN_KEY,
    MASTER_KEY,
    PARTITIONS,
    Worker,
    make_turn,
    unique_user,
)
from streams.app.topology import ALL_TOPICS
from topics.names import MEMORY_PROGRESS

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(STUNNEL is None, reason="no `stunnel4` on PATH (Debian package stunnel4, "
                       "listed in deploy/apt-packages.txt; ./dev test installs it)"),
]
GUARD_S = 240
"""A guard against a hang, never a measure."""
PASSWORD = "s3cret-never-shown"
PET = "I adopted a dog named Luna last year."
SAD = "I lost my job at the bakery today and I feel awful about it."  # a proactivity candidate


@dataclass
class TlsBroker:
    """The embedded broker behind stunnel: `url` is TLS, `plaintext_url` the broker itself. With
    `client_certificates` stunnel takes only clients showing a certificate of the CA."""

    url: str
    plaintext_url: str
    certs: Certs
    directory: Path
    client_certificates: bool

    def env(self, cafile: Path | None = None, **more: str) -> dict[str, str]:
        """The security settings (environment) of a client trusting `cafile` (default: the CA)."""
        return {name.upper(): str(value) for name, value in self.fields(cafile).items()} | more

    def settings(self, **fields: object) -> Settings:
        return Settings(kafka_broker_url=self.url, **{**self.fields(), **fields})  # type: ignore[arg-type]

    def fields(self, cafile: Path | None = None) -> dict[str, object]:
        fields: dict[str, object] = {"kafka_security_protocol": "SSL",
                                     "kafka_ssl_cafile": cafile or self.certs.ca}
        if self.client_certificates:
            fields.update(kafka_ssl_certfile=self.certs.client, kafka_ssl_keyfile=self.certs.client_key,
                          kafka_ssl_key_password=self.certs.client_key_password)
        return fields


def tls_broker(directory: Path, authentication: bool = False,
               client_certificates: bool = False) -> Iterator[TlsBroker]:
    certs = make_certs(directory)
    tls_port = free_port()
    broker = EmbeddedBroker(log_path=directory / "broker.log", advertised_port=tls_port,
                            authentication=authentication)
    with broker, Stunnel(tls_port, broker.port, certs, directory, client_certificates):
        yield TlsBroker(broker.advertised_url, broker.url, certs, directory, client_certificates)


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> Iterator[TlsBroker]:
    """Mutual TLS: every client shows its certificate (an encrypted key and its password)."""
    for broker in tls_broker(tmp_path_factory.mktemp("tls"), client_certificates=True):
        asyncio.run(create_topics(broker.url, ALL_TOPICS, PARTITIONS, broker.settings()))
        yield broker


@pytest.fixture(scope="module")
def sasl(tmp_path_factory) -> Iterator[TlsBroker]:
    """A broker that wants a SASL login, behind TLS (one-way)."""
    yield from tls_broker(tmp_path_factory.mktemp("sasl"), authentication=True)


def test_the_broker_advertises_the_tls_port(tls):
    """Clients reconnect to the advertised address: it must be stunnel's, not the broker's."""
    async def brokers() -> list[str]:
        admin = await started_admin(tls.url, tls.settings())
        try:
            cluster = await admin.describe_cluster()
        finally:
            await admin.close()
        return [f"{b['host']}:{b['port']}" for b in cluster["brokers"]]

    assert asyncio.run(brokers()) == [tls.url]


def test_the_pipeline_runs_over_tls(tls):
    """A worker, `memstream send`, the client library and the tools all connect through TLS
    only: the turns become memories, events, a proactivity candidate and progress records."""
    workdir = tls.directory / "worker"
    worker = Worker(tls.url, workdir / "data", f"memstream-tls-{uuid.uuid4().hex[:6]}",
                    tls.directory / "worker.log", env=tls.env()).start()
    user = unique_user("tls")
    security = client_kwargs(tls.settings().kafka)
    try:
        sent = run_cli(["send", PET, "--user", user, "--turn-id", "1", "--json"],
                       {"KAFKA_BROKER_URL": tls.url, **tls.env()})
        assert sent.exit_code == 0, sent.output
        assert json.loads(sent.stdout)["topic"] == "chat.turns"

        async def scenario() -> None:
            async with AsyncMemstreamClient(tls.url, worker.api_url, ADMIN_KEY,
                                            kafka_security=security) as client:
                candidates = client.proactivity(user_id=user, group_id=f"tls-{uuid.uuid4().hex[:8]}",
                                                from_beginning=True)
                await client.send_turn(make_turn(user, "2", SAD))

                async for event in client.watch(user, replay=True):
                    if isinstance(event, MemoryEvent) and event.kind == "created" and "Luna" in event.summary:
                        break
                else:
                    raise AssertionError("the event stream ended")
                candidate = await candidates.__anext__()
                assert isinstance(candidate, ProactivityCandidate) and candidate.source_turn_ids == ["t1:2"]
                answer = await client.query(user, "What pet does Ana have?")
                assert "Luna" in answer.context

            async with aclosing(read_topic(tls.url, MEMORY_PROGRESS, security=security)) as records:
                async for key, progress in records:
                    if progress[0].get("user_id") == user:  # one record per user per batch
                        assert key == user.encode()
                        break

        asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
    finally:
        worker.stop()


def test_a_certificate_of_another_ca_fails_fast_with_a_named_error(tls):
    untrusted = tls.settings(kafka_ssl_cafile=tls.certs.other_ca)
    with pytest.raises(BrokerConnectionError,
                       match="TLS handshake with .* failed: certificate not trusted by KAFKA_SSL_CAFILE"):
        asyncio.run(create_topics(tls.url, ["x"], 1, untrusted))

    async def send() -> None:
        async with AsyncMemstreamClient(tls.url, kafka_security=client_kwargs(untrusted.kafka),
                                        timeout=GUARD_S) as client:
            await client.send_turn(make_turn(unique_user(), "1", PET))

    with pytest.raises(ProduceError, match="certificate not trusted") as raised:
        asyncio.run(send())
    assert isinstance(raised.value.__cause__, BrokerConnectionError)

    # A worker stops at once, saying why (it does not retry forever).
    exited = run_worker(tls, tls.env(tls.certs.other_ca), "untrusted")
    assert exited.returncode == 1, exited.log
    assert "certificate not trusted by KAFKA_SSL_CAFILE" in exited.log


def test_a_client_without_a_certificate_is_refused_with_a_named_error(tls):
    no_certificate = Settings(kafka_broker_url=tls.url, kafka_security_protocol="SSL",
                              kafka_ssl_cafile=tls.certs.ca)
    with pytest.raises(BrokerConnectionError, match="the broker want.? a client certificate"):
        asyncio.run(create_topics(tls.url, ["x"], 1, no_certificate))


def test_a_client_of_the_wrong_protocol_is_told_so(tls):
    """A plaintext client on the TLS port, and a TLS client on the broker's plaintext port."""
    plaintext = Settings(kafka_broker_url=tls.url)
    with pytest.raises(BrokerConnectionError,
                       match="closed the connection .*a plaintext client on a TLS listener"):
        asyncio.run(create_topics(tls.url, ["x"], 1, plaintext))
    # Tansu reads the TLS hello as the length of a huge request and waits for the rest of it:
    # the check's timeout ends the wait.
    with pytest.raises(BrokerConnectionError, match=tls.plaintext_url):
        asyncio.run(create_topics(tls.plaintext_url, ["x"], 1,
                                  tls.settings(kafka_connect_timeout_seconds=1)))


class StaticToken(AbstractTokenProvider):
    """An OAUTHBEARER token provider (KAFKA_SASL_OAUTH_TOKEN_PROVIDER)."""

    async def token(self) -> str:
        return "eyJhbGciOiJub25lIn0.eyJzdWIiOiJtZW1zdHJlYW0ifQ."


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "OAUTHBEARER"])
def test_a_refused_sasl_login_fails_fast_with_a_named_error(sasl, mechanism):
    """Over TLS (the handshake succeeds), the SASL login is refused: named, not a hang."""
    fields: dict[str, object] = {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": mechanism}
    if mechanism == "OAUTHBEARER":
        fields["kafka_sasl_oauth_token_provider"] = f"{__name__}:StaticToken"
    else:
        fields.update(kafka_sasl_username="memstream", kafka_sasl_password=PASSWORD)
    with pytest.raises(BrokerConnectionError, match=f"SASL login with {mechanism}.* failed"):
        asyncio.run(create_topics(sasl.url, ["x"], 1, sasl.settings(**fields)))


def test_a_worker_with_a_refused_login_stops_saying_so(sasl):
    env = sasl.env(KAFKA_SECURITY_PROTOCOL="SASL_SSL", KAFKA_SASL_MECHANISM="SCRAM-SHA-512",
                   KAFKA_SASL_USERNAME="memstream", KAFKA_SASL_PASSWORD=PASSWORD)
    exited = run_worker(sasl, env, "refused")
    assert exited.returncode == 1, exited.log
    assert "SASL login with SCRAM-SHA-512 as 'memstream'" in exited.log
    assert PASSWORD not in exited.log


def test_a_sasl_broker_does_not_offer_plain_nor_serve_without_a_login(sasl):
    settings = sasl.settings(kafka_security_protocol="SASL_SSL", kafka_sasl_mechanism="PLAIN",
                             kafka_sasl_username="memstream", kafka_sasl_password=PASSWORD)
    with pytest.raises(BrokerConnectionError, match="SASL login with PLAIN .*closed the connection"):
        asyncio.run(create_topics(sasl.url, ["x"], 1, settings))
    with pytest.raises(BrokerConnectionError, match="not a Metadata request .*does it want a SASL login"):
        asyncio.run(create_topics(sasl.url, ["x"], 1, sasl.settings()))


def run_cli(args: list[str], env: dict[str, str]):
    """`memstream ARGS` in this process with `env` (the settings are read again for it)."""
    get_settings.cache_clear()
    try:
        return CliRunner().invoke(cli.app, args, env=env)
    finally:
        get_settings.cache_clear()


@dataclass
class Exited:
    returncode: int
    log: str


def run_worker(broker: TlsBroker, env: dict[str, str], name: str) -> Exited:
    """A `memstream worker` process with `env`, run until it exits (GUARD_S guards a hang)."""
    log_path = broker.directory / f"worker-{name}.log"
    proc = start_worker(broker.url, free_port(), broker.directory / f"data-{name}",
                        f"memstream-{name}", PARTITIONS, log_path,
                        {"MEMSTREAM_MASTER_KEY": MASTER_KEY, **env})
    try:
        returncode = proc.wait(GUARD_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    return Exited(returncode, " ".join(log_path.read_text().split()))  # unwrapped console lines
