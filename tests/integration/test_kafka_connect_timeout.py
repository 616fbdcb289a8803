"""Issue 48, finding 11, against a real broker: a TLS client pointed at the embedded broker's
plaintext listener (Tansu reads the TLS hello as the length of a huge request and waits for the
rest) fails within KAFKA_CONNECT_TIMEOUT_SECONDS with a `BrokerConnectionError`: `memstream
replay` and `send` in one line (exit 1, no traceback), the client library, the tools' producer
and the LangGraph store's. It used to wait out aiokafka's 40 s request timeout and end in a raw
KafkaConnectionError traceback.

No duration is asserted; GUARD_S only guards a hang."""
from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.store.base import PutOp

from streams.client import AsyncMemstreamClient, ProduceError
from streams.client import ClientError
from streams.kafka.security import BrokerConnectionError
from streams.settings import get_settings
from streams.tools.client import TurnProducer
from streams.client.langgraph_store import MemstreamStore
from tests.integration.conftest import make_turn, unique_user
from tests.unit.tools.test_tools_connect_check import empty_worker

pytestmark = pytest.mark.integration
ROOT = Path(__file__).parents[2]
GUARD_S = 180
"""A guard against a hang, never a measure."""
TLS_ENV = {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_CONNECT_TIMEOUT_SECONDS": "1"}


def memstream(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streams", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=GUARD_S, cwd=ROOT)


def one_line(result: subprocess.CompletedProcess) -> str:
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stdout + result.stderr
    return lines[0]


@pytest.fixture
def tls_settings(monkeypatch: pytest.MonkeyPatch):
    for name, value in TLS_ENV.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_replay_and_send_over_tls_to_a_plaintext_broker_are_one_line(broker, tmp_path):
    turns = tmp_path / "turns.jsonl"
    turns.write_text(make_turn(unique_user("tls-replay"), "1", "I adopted a dog.").model_dump_json() + "\n")
    env = {"KAFKA_BROKER_URL": broker.url, **TLS_ENV}
    for command, args in (("replay", ["replay", str(turns)]),
                          ("send", ["send", "--user", unique_user("tls-send"), "I adopted a dog."])):
        result = memstream(*args, env=env)
        assert result.returncode == 1, result.stderr
        line = one_line(result)
        assert line.startswith(f"{command} failed: ") and broker.url in line
        assert "KAFKA_SECURITY_PROTOCOL=SSL" in line


def test_the_client_library_over_tls_to_a_plaintext_broker_fails_named(broker):
    async def send() -> None:
        security = {"security_protocol": "SSL", "ssl_context": ssl.create_default_context()}
        async with AsyncMemstreamClient(broker.url, kafka_security=security, connect_timeout=1) as client:
            await client.send_turn(make_turn(unique_user("tls-client"), "1", "I adopted a dog."))

    with pytest.raises(ProduceError, match=broker.url) as raised:
        asyncio.run(asyncio.wait_for(send(), GUARD_S))
    assert isinstance(raised.value.__cause__, BrokerConnectionError)


def test_the_tools_and_the_store_over_tls_to_a_plaintext_broker_fail_named(broker, tls_settings):
    async def replay() -> None:
        async with TurnProducer(broker.url):
            raise AssertionError("started over TLS on a plaintext listener")

    async def put() -> None:
        async with empty_worker() as api:
            store = MemstreamStore(api, "key", "planner", broker=broker.url, timeout_s=GUARD_S)
            await store.abatch([PutOp(("memories", unique_user("tls-store")), "goal",
                                      {"text": "Ana runs a marathon in May."})])

    for scenario in (replay, put):
        with pytest.raises((BrokerConnectionError, ClientError),  # the store's: the client's error
                           match=f"{broker.url}.*KAFKA_SECURITY_PROTOCOL=SSL") as failed:
            asyncio.run(asyncio.wait_for(scenario(), GUARD_S))
        assert isinstance(failed.value, BrokerConnectionError) or isinstance(failed.value.__cause__, BrokerConnectionError)
