"""The Kafka security settings (streams/kafka/security.py) as each client gets them: aiokafka's
producers and consumers (tools, bench, client library), the admin client, the worker's Faust
app; incomplete or contradictory settings are named errors; secrets never print.

SASL logins that succeed cannot run against the embedded broker (tests/integration/
test_kafka_security.py says why), so what they send is checked here, at the kwargs level."""
from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import pytest
from aiokafka.abc import AbstractTokenProvider
from faust.auth import OAuthCredentials, SASLCredentials, SSLCredentials
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
from typer.testing import CliRunner

from streams.app import topic_admin
from streams.kafka import security as kafka_security
from streams.app.factory import create_faust_app
from streams.kafka.security import (
    BrokerConnectionError,
    KafkaSettingsError,
    admin_kwargs,
    bootstrap_servers,
    check_connection,
    client_kwargs,
    faust_credentials,
)
from streams.settings import Settings, get_settings
from streams.client import AsyncMemstreamClient
from streams.client.kafka import idempotent_producer, topic_consumer
from streams.cli import main as cli
from streams.tools.client import make_producer
from tests.fakes.tls import Certs, make_certs

SECRET = "s3cret-never-shown"


class StaticToken(AbstractTokenProvider):
    async def token(self) -> str:
        return "a.b.c"


TOKEN = StaticToken()


def static_token() -> StaticToken:
    return TOKEN


def not_a_provider() -> str:
    return "a token"


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def settings(**fields: Any) -> Settings:
    return Settings(kafka_broker_url="kafka.example:9096", **fields)


def scram(**fields: Any) -> Settings:
    return settings(kafka_security_protocol="SASL_SSL", kafka_sasl_mechanism="SCRAM-SHA-512",
                    kafka_sasl_username="memstream", kafka_sasl_password=SECRET, **fields)


def without_context(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if k != "ssl_context"}


def test_plaintext_is_the_default_and_changes_nothing(tmp_path: Path) -> None:
    plain = settings(data_dir=tmp_path)
    assert client_kwargs(plain.kafka) == admin_kwargs(plain.kafka) == {"security_protocol": "PLAINTEXT"}
    assert faust_credentials(plain.kafka) is None
    assert create_faust_app(plain).conf.broker_credentials is None


def test_ssl_checks_the_brokers_against_the_ca_and_shows_a_client_certificate(certs, tmp_path) -> None:
    tls = settings(kafka_security_protocol="SSL", kafka_ssl_cafile=certs.ca,
                   kafka_ssl_certfile=certs.client, kafka_ssl_keyfile=certs.client_key,
                   kafka_ssl_key_password=certs.client_key_password, data_dir=tmp_path)
    kwargs = client_kwargs(tls.kafka)
    context = kwargs["ssl_context"]
    assert kwargs["security_protocol"] == "SSL" and set(kwargs) == {"security_protocol", "ssl_context"}
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "memstream test CA"),),)]

    conf = create_faust_app(tls).conf  # the worker
    assert isinstance(conf.broker_credentials, SSLCredentials)
    auth = credentials_to_aiokafka_auth(conf.broker_credentials, conf.ssl_context)
    assert auth["security_protocol"] == "SSL" and isinstance(auth["ssl_context"], ssl.SSLContext)


def test_without_a_ca_file_the_system_cas_are_trusted() -> None:
    context = client_kwargs(settings(kafka_security_protocol="SSL").kafka)["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


@pytest.mark.parametrize("protocol", ["SASL_SSL", "SASL_PLAINTEXT"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_logins_reach_every_client_alike(protocol, mechanism, tmp_path) -> None:
    sasl = settings(kafka_security_protocol=protocol, kafka_sasl_mechanism=mechanism,
                    kafka_sasl_username="memstream", kafka_sasl_password=SECRET, data_dir=tmp_path)
    kwargs = client_kwargs(sasl.kafka)
    assert without_context(kwargs) == {
        "security_protocol": protocol, "sasl_mechanism": mechanism,
        "sasl_plain_username": "memstream", "sasl_plain_password": SECRET}
    assert isinstance(kwargs.get("ssl_context"), ssl.SSLContext) == (protocol == "SASL_SSL")
    assert without_context(admin_kwargs(sasl.kafka)) == without_context(kwargs)

    app = create_faust_app(sasl)  # the worker: its consumers and its producer
    assert isinstance(app.conf.broker_credentials, SASLCredentials)
    consumer = credentials_to_aiokafka_auth(app.conf.broker_credentials, app.conf.ssl_context)
    producer = dict(app.producer._settings_auth())
    for auth in (consumer, producer):
        assert without_context(auth) == without_context(kwargs)
        assert (auth["ssl_context"] is not None) == (protocol == "SASL_SSL")


@pytest.mark.parametrize("spec", [f"{__name__}:StaticToken", f"{__name__}:TOKEN",
                                  f"{__name__}:static_token"])
def test_oauthbearer_takes_the_token_provider_the_settings_name(spec, tmp_path) -> None:
    oauth = settings(kafka_security_protocol="SASL_SSL", kafka_sasl_mechanism="OAUTHBEARER",
                     kafka_sasl_oauth_token_provider=spec, data_dir=tmp_path)
    kwargs = client_kwargs(oauth.kafka)
    assert kwargs["sasl_mechanism"] == "OAUTHBEARER" and kwargs["security_protocol"] == "SASL_SSL"
    assert isinstance(kwargs["sasl_oauth_token_provider"], StaticToken)
    assert "sasl_plain_password" not in kwargs

    conf = create_faust_app(oauth).conf
    assert isinstance(conf.broker_credentials, OAuthCredentials)
    auth = credentials_to_aiokafka_auth(conf.broker_credentials, conf.ssl_context)
    assert auth["security_protocol"] == "SASL_SSL" and auth["sasl_mechanism"] == "OAUTHBEARER"
    assert isinstance(auth["sasl_oauth_token_provider"], StaticToken)


@pytest.mark.parametrize("fields, message", [
    ({"kafka_security_protocol": "SASL_SSL", "kafka_sasl_username": "u"},
     "KAFKA_SASL_MECHANISM=PLAIN needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"),
    ({"kafka_security_protocol": "SASL_PLAINTEXT", "kafka_sasl_mechanism": "SCRAM-SHA-256",
      "kafka_sasl_password": SECRET}, "needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"),
    ({"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "OAUTHBEARER"},
     "needs KAFKA_SASL_OAUTH_TOKEN_PROVIDER=module:attribute"),
    ({"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "OAUTHBEARER",
      "kafka_sasl_oauth_token_provider": "no_such_module_here:Provider"}, "No module named"),
    ({"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "OAUTHBEARER",
      "kafka_sasl_oauth_token_provider": f"{__name__}:not_a_provider"},
     "gives a str, not an aiokafka AbstractTokenProvider"),
    ({"kafka_ssl_cafile": "/etc/ca.pem"},
     "KAFKA_SSL_CAFILE set, but KAFKA_SECURITY_PROTOCOL=PLAINTEXT does not use it"),
    ({"kafka_security_protocol": "SSL", "kafka_sasl_password": SECRET},
     "KAFKA_SASL_PASSWORD set, but KAFKA_SECURITY_PROTOCOL=SSL does not use it"),
    ({"kafka_security_protocol": "SSL", "kafka_ssl_cafile": "/no/such/ca.pem"},
     "KAFKA_SSL_CAFILE /no/such/ca.pem: cannot be loaded"),
    ({"kafka_security_protocol": "SSL", "kafka_ssl_keyfile": "/etc/key.pem"},
     "KAFKA_SSL_KEYFILE is set without KAFKA_SSL_CERTFILE"),
])
def test_incomplete_or_contradictory_settings_are_named_errors(fields, message) -> None:
    with pytest.raises(KafkaSettingsError, match=message) as raised:
        client_kwargs(settings(**fields).kafka)
    assert SECRET not in str(raised.value)


def test_a_wrong_key_password_is_a_named_error(certs) -> None:
    wrong = settings(kafka_security_protocol="SSL", kafka_ssl_certfile=certs.client,
                     kafka_ssl_keyfile=certs.client_key, kafka_ssl_key_password="not it")
    with pytest.raises(KafkaSettingsError, match="KAFKA_SSL_CERTFILE .*cannot be loaded"):
        client_kwargs(wrong.kafka)


def test_the_settings_are_read_from_the_environment_and_secrets_are_masked(monkeypatch) -> None:
    env = {"KAFKA_BROKER_URL": "b-1.msk.example:9096", "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
           "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SASL_USERNAME": "memstream",
           "KAFKA_SASL_PASSWORD": SECRET, "KAFKA_SSL_KEY_PASSWORD": SECRET}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    read = Settings()
    assert read.kafka.kafka_sasl_password is not None and read.kafka.kafka_sasl_password.get_secret_value() == SECRET
    assert SECRET not in repr(read) and SECRET not in str(read.model_dump())

    get_settings.cache_clear()
    try:
        shown = CliRunner().invoke(cli.app, ["settings"])
    finally:
        get_settings.cache_clear()
    assert shown.exit_code == 0, shown.output
    assert "KAFKA_SASL_PASSWORD=****" in shown.stdout and "KAFKA_SSL_KEY_PASSWORD=****" in shown.stdout
    assert "KAFKA_SASL_USERNAME=memstream" in shown.stdout and SECRET not in shown.stdout


async def test_the_admin_client_connects_with_the_settings(monkeypatch) -> None:
    made: dict[str, Any] = {}

    class Admin:
        def __init__(self, **kwargs: Any) -> None:
            made["admin"] = kwargs

        async def start(self) -> None:
            pass

    async def checked(bootstrap: str, kwargs: dict[str, Any], timeout: float) -> None:
        made["check"] = (bootstrap, kwargs, timeout)

    monkeypatch.setattr(topic_admin, "AIOKafkaAdminClient", Admin)
    monkeypatch.setattr(topic_admin, "check_connection", checked)
    sasl = scram(kafka_connect_timeout_seconds=3)
    await topic_admin.started_admin("kafka.example:9096", sasl)
    assert made["admin"]["bootstrap_servers"] == "kafka.example:9096"
    assert without_context(made["admin"]) == {"bootstrap_servers": "kafka.example:9096",
                                              "client_id": "memstream-admin",
                                              **without_context(client_kwargs(sasl.kafka))}
    assert made["check"][0] == "kafka.example:9096" and made["check"][2] == 3


async def test_the_client_library_and_the_tools_pass_the_settings_on(monkeypatch) -> None:
    sasl = settings(kafka_security_protocol="SASL_PLAINTEXT", kafka_sasl_mechanism="SCRAM-SHA-256",
                    kafka_sasl_username="memstream", kafka_sasl_password=SECRET)
    kwargs = client_kwargs(sasl.kafka)
    client = AsyncMemstreamClient.from_settings(sasl)
    assert client.broker == "kafka.example:9096" and client.kafka_security == kwargs

    def security(made: Any) -> dict[str, Any]:
        connections = made.client if hasattr(made, "client") else made._client  # producer, consumer
        return {name: getattr(connections, "_" + name) for name in kwargs}

    producer = idempotent_producer(client.broker, linger_ms=5, client_id="c", security=kwargs)
    consumer = topic_consumer(client.broker, "memory.proactivity", group_id=None,
                              from_beginning=False, client_id="c", security=kwargs)
    for name, value in {"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_USERNAME": "memstream",
                        "KAFKA_SASL_MECHANISM": "SCRAM-SHA-256", "KAFKA_SASL_PASSWORD": SECRET}.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        tools_producer = make_producer("kafka.example:9096")  # the tools' default: the settings
    finally:
        get_settings.cache_clear()
    try:
        for made in (producer, consumer, tools_producer):
            assert security(made) == kwargs
    finally:
        await producer.stop()
        await consumer.stop()
        await tools_producer.stop()


def test_bootstrap_lists_are_split_into_servers() -> None:
    assert bootstrap_servers("b-1.example:9096, b-2.example:9096") == [
        ("b-1.example", 9096), ("b-2.example", 9096)]
    assert bootstrap_servers("kafka://host") == [("host", 9092)]
    assert bootstrap_servers("[::1]:9093") == [("::1", 9093)]


async def test_an_unreachable_broker_is_a_named_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(BrokerConnectionError, match=f"cannot connect to 127.0.0.1:{port}"):
        await check_connection(f"127.0.0.1:{port}", {"security_protocol": "PLAINTEXT"}, 30)
    with pytest.raises(BrokerConnectionError, match="no bootstrap servers"):
        await check_connection(" ", {}, 30)


async def test_a_broker_that_never_answers_is_given_up_after_the_timeout() -> None:
    """A silent listener (as a TLS client meets on a plaintext one): the check ends, named."""
    held: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda r, w: held.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(BrokerConnectionError, match=f"no answer from 127.0.0.1:{port} within 0.2s"):
            await check_connection(f"127.0.0.1:{port}", {"security_protocol": "PLAINTEXT"}, 0.2)
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_certificate_of_another_ca_is_named(certs) -> None:
    """Without stunnel: a TLS listener in this process, with a certificate the client's CA file
    did not sign."""
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(certs.server, certs.server_key)
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    untrusted = client_kwargs(settings(kafka_security_protocol="SSL", kafka_ssl_cafile=certs.other_ca).kafka)
    try:
        with pytest.raises(BrokerConnectionError, match="certificate not trusted by KAFKA_SSL_CAFILE"):
            await check_connection(f"127.0.0.1:{port}", untrusted, 30)
    finally:
        server.close()
        await server.wait_closed()


def test_the_module_is_the_one_place_that_reads_the_security_settings() -> None:
    """Every client builds its connection from `client_kwargs`/`admin_kwargs`/`faust_credentials`."""
    root = Path(kafka_security.__file__).parents[2]
    readers = sorted(str(p.relative_to(root)) for p in (root / "streams").rglob("*.py")
                     if "kafka_sasl_" in p.read_text() or "kafka_ssl_" in p.read_text())
    assert readers == ["streams/kafka/security.py", "streams/settings/kafka.py"]
