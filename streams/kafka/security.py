"""How memstream's Kafka clients connect: the KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_* and
KAFKA_SSL_* settings turned into what each kind of client takes, in one place.

- `client_kwargs(kafka)`: keyword arguments of aiokafka's producers and consumers (the CLI,
  the tools, the bench, the client library: `AsyncMemstreamClient.from_settings`).
- `admin_kwargs(kafka)`: those of `AIOKafkaAdminClient` (topic creation, `topic_admin`).
- `faust_credentials(kafka)`: the worker's Faust `broker_credentials`.
- `check_connection(bootstrap, kwargs, timeout)`: one connection with those kwargs (TCP, TLS
  handshake, ApiVersions, SASL login, Metadata), all of it bounded by `timeout` per bootstrap
  server; a failure is a `BrokerConnectionError` saying which step failed, instead of aiokafka's
  "Unable to bootstrap" (or a wait of its 40 s request timeout). Topic creation runs it first.
- `kafka_producer(bootstrap, connect_timeout=..., **options)`, `kafka_consumer(...)`: the one way
  every other Kafka client of memstream is made (the CLI, the tools, the bench, the client
  library, the LangGraph store): aiokafka's, whose `start` runs `check_connection` first, and
  whose failure to connect is a `BrokerConnectionError`, never aiokafka's own retries.

docs/kafka-security.md has the settings of MSK, Confluent Cloud and Aiven.
"""
from __future__ import annotations

import asyncio
import importlib
import ssl
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.abc import AbstractTokenProvider
from aiokafka.conn import create_conn
from aiokafka.errors import KafkaConnectionError, KafkaError, UnsupportedSaslMechanismError
from aiokafka.protocol.metadata import MetadataRequest

from streams.errors import BrokerError
from streams.settings.kafka import DEFAULT_CONNECT_TIMEOUT_SECONDS, DEFAULT_KAFKA_PORT, masked
from streams.settings.kafka import bootstrap_servers as _bootstrap_servers

if TYPE_CHECKING:
    from faust.types.auth import CredentialsT

    from streams.settings import KafkaSettings

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PORT = DEFAULT_KAFKA_PORT
DEFAULT_CONNECT_TIMEOUT_S = DEFAULT_CONNECT_TIMEOUT_SECONDS
"""The check's bound when none is given (KAFKA_CONNECT_TIMEOUT_SECONDS' default)."""
CONNECTION_KEYS = ("security_protocol", "ssl_context", "sasl_mechanism", "sasl_plain_username",
                   "sasl_plain_password", "sasl_kerberos_service_name", "sasl_kerberos_domain_name",
                   "sasl_oauth_token_provider")
"""The aiokafka keyword arguments that decide how a connection is made (`check_connection`)."""


class KafkaSettingsError(BrokerError):
    """The Kafka security settings are incomplete, contradict each other, or name a file or
    token provider that cannot be loaded."""


class BrokerConnectionError(BrokerError):
    """No broker could be reached, or one refused the TLS handshake or the SASL login; the
    message says which and what to check."""


def ssl_context(kafka: KafkaSettings) -> ssl.SSLContext | None:
    """The TLS context of SSL and SASL_SSL (None otherwise): the brokers' certificates are
    checked against KAFKA_SSL_CAFILE (else the system's CAs) and their host names; with
    KAFKA_SSL_CERTFILE the client shows its own certificate."""
    if kafka.kafka_security_protocol not in TLS_PROTOCOLS:
        return None
    if kafka.kafka_ssl_keyfile and not kafka.kafka_ssl_certfile:
        raise KafkaSettingsError("KAFKA_SSL_KEYFILE is set without KAFKA_SSL_CERTFILE")
    cafile = kafka.kafka_ssl_cafile
    context = _load(ssl.create_default_context, "KAFKA_SSL_CAFILE", cafile,
                    cafile=str(cafile) if cafile else None)
    if kafka.kafka_ssl_certfile:
        password = kafka.kafka_ssl_key_password
        _load(context.load_cert_chain, "KAFKA_SSL_CERTFILE", kafka.kafka_ssl_certfile,
              certfile=str(kafka.kafka_ssl_certfile),
              keyfile=str(kafka.kafka_ssl_keyfile) if kafka.kafka_ssl_keyfile else None,
              password=password.get_secret_value() if password else None)
    return context


def _load(load: Any, name: str, path: object, **kwargs: Any) -> Any:
    try:
        return load(**kwargs)
    except (OSError, ssl.SSLError) as exc:
        raise KafkaSettingsError(f"{name} {path}: cannot be loaded: {exc}") from exc


def client_kwargs(kafka: KafkaSettings) -> dict[str, Any]:
    """aiokafka's connection keyword arguments for a producer or a consumer."""
    _check_unused(kafka)
    protocol = kafka.kafka_security_protocol
    kwargs: dict[str, Any] = {"security_protocol": protocol}
    if protocol in TLS_PROTOCOLS:
        kwargs["ssl_context"] = ssl_context(kafka)
    if protocol in SASL_PROTOCOLS:
        mechanism = kafka.kafka_sasl_mechanism
        kwargs["sasl_mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            kwargs["sasl_oauth_token_provider"] = oauth_token_provider(kafka)
        else:
            if not kafka.kafka_sasl_username or kafka.kafka_sasl_password is None:
                raise KafkaSettingsError(f"KAFKA_SASL_MECHANISM={mechanism} needs "
                                         "KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD")
            kwargs["sasl_plain_username"] = kafka.kafka_sasl_username
            kwargs["sasl_plain_password"] = kafka.kafka_sasl_password.get_secret_value()
    return kwargs


def admin_kwargs(kafka: KafkaSettings) -> dict[str, Any]:
    """`AIOKafkaAdminClient`'s connection keyword arguments (the same as a producer's)."""
    return client_kwargs(kafka)


def faust_credentials(kafka: KafkaSettings) -> CredentialsT | None:
    """The worker's Faust `broker_credentials` (None: PLAINTEXT). Faust turns them back into
    `client_kwargs`' arguments for its consumer and producer."""
    from faust.auth import OAuthCredentials, SASLCredentials, SSLCredentials

    kwargs = client_kwargs(kafka)
    protocol, context = kwargs["security_protocol"], kwargs.get("ssl_context")
    if protocol == "PLAINTEXT":
        return None
    if protocol == "SSL":
        return SSLCredentials(context)
    if kwargs["sasl_mechanism"] == "OAUTHBEARER":
        return OAuthCredentials(oauth_cb=kwargs["sasl_oauth_token_provider"], ssl_context=context)
    return SASLCredentials(username=kwargs["sasl_plain_username"],
                           password=kwargs["sasl_plain_password"], ssl_context=context,
                           mechanism=kwargs["sasl_mechanism"])


def oauth_token_provider(kafka: KafkaSettings) -> AbstractTokenProvider:
    """The OAUTHBEARER token provider KAFKA_SASL_OAUTH_TOKEN_PROVIDER names (`module:attribute`:
    an `AbstractTokenProvider` instance, or a class or factory called without arguments)."""
    spec = kafka.kafka_sasl_oauth_token_provider
    if not spec or ":" not in spec:
        raise KafkaSettingsError("KAFKA_SASL_MECHANISM=OAUTHBEARER needs "
                                 "KAFKA_SASL_OAUTH_TOKEN_PROVIDER=module:attribute")
    module_name, _, attribute = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise KafkaSettingsError(f"KAFKA_SASL_OAUTH_TOKEN_PROVIDER={spec}: {exc}") from exc
    provider = target if isinstance(target, AbstractTokenProvider) else target()
    if not isinstance(provider, AbstractTokenProvider):
        raise KafkaSettingsError(f"KAFKA_SASL_OAUTH_TOKEN_PROVIDER={spec} gives a "
                                 f"{type(provider).__name__}, not an aiokafka AbstractTokenProvider")
    return provider


def _check_unused(kafka: KafkaSettings) -> None:
    """A TLS or SASL setting the protocol would ignore is a mistake (a CA file given while the
    protocol is still PLAINTEXT would otherwise connect in the clear)."""
    protocol = kafka.kafka_security_protocol
    unused = []
    if protocol not in TLS_PROTOCOLS:
        unused += [name for name in ("kafka_ssl_cafile", "kafka_ssl_certfile", "kafka_ssl_keyfile",
                                     "kafka_ssl_key_password") if getattr(kafka, name)]
    if protocol not in SASL_PROTOCOLS:
        unused += [name for name in ("kafka_sasl_username", "kafka_sasl_password",
                                     "kafka_sasl_oauth_token_provider") if getattr(kafka, name)]
    if unused:
        raise KafkaSettingsError(f"{', '.join(n.upper() for n in unused)} set, but "
                                 f"KAFKA_SECURITY_PROTOCOL={protocol} does not use it")


def bootstrap_servers(bootstrap: str) -> list[tuple[str, int]]:
    """(host, port) of each server of a bootstrap list (`host:port,host:port`, IPv6 in []); one
    that is none (`host:abc`, `:9092`, a port out of range) is a `BrokerConnectionError`
    saying which (KAFKA_BROKER_URL is checked so when the settings are read)."""
    try:
        return _bootstrap_servers(bootstrap)
    except ValueError as exc:
        raise BrokerConnectionError(f"not a list of bootstrap servers (host:port,...): {exc}") from None


async def check_connection(bootstrap: str, kwargs: Mapping[str, Any], timeout: float) -> None:
    """Connect to the first bootstrap server that answers with `kwargs` (TCP, TLS handshake,
    ApiVersions, SASL login, then a Metadata request: a listener that wants a login the
    settings do not make closes the connection there), within `timeout` seconds per server.

    Raises `BrokerConnectionError` when none succeeds, with the first failure's reason."""
    connection = {key: value for key, value in kwargs.items() if key in CONNECTION_KEYS}
    failures = []
    loop = asyncio.get_running_loop()
    for host, port in bootstrap_servers(bootstrap):
        deadline = loop.time() + timeout
        try:
            conn = await asyncio.wait_for(
                create_conn(host, port, client_id="memstream-check",
                            request_timeout_ms=int(timeout * 1000), **connection), timeout)
        except Exception as exc:  # noqa: BLE001 - every failure is explained below
            failures.append(explain(host, port, kwargs, exc, timeout))
            continue
        try:
            await asyncio.wait_for(conn.send(MetadataRequest([])), max(deadline - loop.time(), 0.001))
        except (KafkaError, asyncio.TimeoutError) as exc:
            failures.append(f"{host}:{port} accepted the connection but not a Metadata request "
                            f"({exc!r}): does it want a SASL login? KAFKA_SECURITY_PROTOCOL="
                            f"{kwargs.get('security_protocol', 'PLAINTEXT')}")
            continue
        finally:
            conn.close()
        return
    if not failures:
        raise BrokerConnectionError(f"no bootstrap servers in {bootstrap!r}")
    more = f" (and {len(failures) - 1} more bootstrap servers failed)" if len(failures) > 1 else ""
    raise BrokerConnectionError(failures[0] + more)


async def _checked_start(client: AIOKafkaProducer | AIOKafkaConsumer, start: Callable[[], Awaitable[None]],
                         bootstrap: str, kwargs: Mapping[str, Any], timeout: float) -> None:
    """`start` of a producer or consumer, after `check_connection`; a client that did not start
    is stopped (it holds no connection), and aiokafka's failure to connect after a check that
    passed (the broker went away between) is a `BrokerConnectionError` too."""
    try:
        await check_connection(bootstrap, kwargs, timeout)
        await start()
    except BaseException as exc:
        with suppress(Exception):
            await client.stop()
        if isinstance(exc, KafkaConnectionError):
            raise BrokerConnectionError(f"cannot connect to {masked(bootstrap)}: {exc}") from exc
        raise


class CheckedProducer(AIOKafkaProducer):
    """aiokafka's producer, whose `start` runs the connection check first (`kafka_producer`)."""

    def __init__(self, *, connect_timeout: float, **options: Any) -> None:
        super().__init__(**options)
        self._check = (options["bootstrap_servers"], options, connect_timeout)

    async def start(self) -> None:
        await _checked_start(self, super().start, *self._check)


class CheckedConsumer(AIOKafkaConsumer):
    """aiokafka's consumer, whose `start` runs the connection check first (`kafka_consumer`)."""

    def __init__(self, *topics: str, connect_timeout: float, **options: Any) -> None:
        super().__init__(*topics, **options)
        self._check = (options["bootstrap_servers"], options, connect_timeout)

    async def start(self) -> None:
        await _checked_start(self, super().start, *self._check)


def kafka_producer(bootstrap: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
                   **options: Any) -> AIOKafkaProducer:
    """An aiokafka producer of `bootstrap` (`options`: aiokafka's, the connection's from
    `client_kwargs` among them) whose `start` first runs `check_connection` within
    `connect_timeout` seconds (KAFKA_CONNECT_TIMEOUT_SECONDS): a broker that cannot be reached,
    or refuses the TLS handshake or the login, is a `BrokerConnectionError` saying so."""
    return CheckedProducer(bootstrap_servers=bootstrap, connect_timeout=connect_timeout, **options)


def kafka_consumer(bootstrap: str, *topics: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
                   **options: Any) -> AIOKafkaConsumer:
    """An aiokafka consumer of `topics` (none: assigned later) on `bootstrap`, started as
    `kafka_producer`'s producer is: after the connection check."""
    return CheckedConsumer(*topics, bootstrap_servers=bootstrap, connect_timeout=connect_timeout,
                           **options)


def explain(host: str, port: int, kwargs: Mapping[str, Any], exc: BaseException,
            timeout: float) -> str:
    """What a failed connection attempt to `host:port` means, and what to check."""
    where = f"{host}:{port}"
    protocol = kwargs.get("security_protocol", "PLAINTEXT")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (f"TLS handshake with {where} failed: certificate not trusted by "
                f"KAFKA_SSL_CAFILE (or the system's CAs when unset): {exc.verify_message}")
    if isinstance(exc, ssl.SSLError) and "CERTIFICATE" in str(exc.reason):  # an alert of the broker
        return (f"TLS handshake with {where} failed: the broker wants a client certificate "
                f"(KAFKA_SSL_CERTFILE) it did not get, or not accept: {exc.reason}")
    if isinstance(exc, ssl.SSLError):
        return (f"TLS handshake with {where} failed: {exc.reason or exc} (is it a TLS listener? "
                f"KAFKA_SECURITY_PROTOCOL={protocol})")
    if isinstance(exc, asyncio.TimeoutError):
        return (f"no answer from {where} within {timeout:g}s (KAFKA_CONNECT_TIMEOUT_SECONDS): a "
                f"TLS client on a plaintext listener, or the reverse, waits like this; "
                f"KAFKA_SECURITY_PROTOCOL={protocol}")
    if isinstance(exc, OSError):
        return f"cannot connect to {where}: {exc}"
    if isinstance(exc, KafkaConnectionError) and protocol == "SSL":
        return (f"{where} closed the connection after the TLS handshake: does the broker want a "
                f"client certificate (KAFKA_SSL_CERTFILE) it did not get, or not accept?")
    if isinstance(exc, KafkaConnectionError) and protocol not in SASL_PROTOCOLS:
        return (f"{where} closed the connection (a plaintext client on a TLS listener? "
                f"KAFKA_SECURITY_PROTOCOL={protocol}): {exc}")
    if protocol in SASL_PROTOCOLS:
        mechanism = kwargs.get("sasl_mechanism")
        if isinstance(exc, UnsupportedSaslMechanismError):
            return f"{where} does not offer SASL mechanism {mechanism} (is SASL enabled on it?)"
        login = f"SASL login with {mechanism}"
        if kwargs.get("sasl_plain_username"):
            login += f" as {kwargs['sasl_plain_username']!r}"
        if isinstance(exc, KafkaConnectionError):
            return (f"{login} to {where} failed: the broker closed the connection (is "
                    f"{mechanism} enabled on it?)")
        hint = ("an invalid or expired token?" if mechanism == "OAUTHBEARER"
                else "unknown user or wrong password?")
        if isinstance(exc, KafkaError):
            return f"{login} to {where} failed: {exc} ({hint})"
        return f"{login} to {where} failed: the broker refused it ({hint}): {exc!r}"
    return f"connecting to {where} failed: {exc!r}"
