"""Every Kafka client the tools make takes the settings' connection arguments (TLS, SASL:
streams/kafka/security.py), not only the worker's and the client library's."""
from __future__ import annotations

from typing import Any

import pytest

from streams.tools import key_rotation as rotation
from streams.tools import unseal

SECURE = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512"}


class Made(Exception):
    """Raised by the stand-in constructors once they have seen their arguments."""


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def stand_in(*args: Any, **kwargs: Any) -> None:
        seen.append(kwargs)
        raise Made

    monkeypatch.setattr("streams.kafka.security.client_kwargs", lambda settings: dict(SECURE))
    for module in (unseal, rotation):
        for name in ("AIOKafkaConsumer", "AIOKafkaProducer", "AIOKafkaAdminClient"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, stand_in)
    return seen


@pytest.mark.parametrize("call", [
    lambda: unseal.read_records("kafka:9093", "memory.events"),
    lambda: rotation.latest_records("kafka:9093", "user_keys"),
    lambda: rotation.group_members("kafka:9093", "memstream"),
    lambda: rotation.write_records("kafka:9093", "user_keys", {(0, b"u"): b"v"}),
])
async def test_the_tools_connect_with_the_settings_security(made, call) -> None:
    with pytest.raises(Made):
        await call()
    assert made and all(kwargs.items() >= SECURE.items() for kwargs in made)
