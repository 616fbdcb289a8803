"""Real Apache Kafka and OpenSearch in containers (testcontainers), where a Docker engine exists.

Everything under tests/containers/ is skipped, with the reason, when no engine answers: the
docker CLI being installed is not enough, the engine must reply to a ping (DOCKER_HOST or the
default socket). The broker-backed tests of tests/integration/ cover the same paths on the
embedded broker and osmem-server everywhere.
"""
from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Iterable

import pytest
import requests

from streams.app.topic_admin import create_topics
from tests.integration.conftest import PARTITIONS, Worker
from streams.app.topology import ALL_TOPICS

# Pinned images: a KRaft Kafka that testcontainers' KafkaContainer knows how to start, and the
# OpenSearch of docker-compose.yml.
KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"
OPENSEARCH_IMAGE = "opensearchproject/opensearch:2.19.1"
HERE = Path(__file__).parent


@functools.cache
def docker_unavailable() -> str | None:
    """Why no Docker engine can be used here, or None when one answers a ping."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError as exc:  # pragma: no cover - docker comes with testcontainers
        return f"the docker SDK is not installed ({exc})"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except (DockerException, requests.exceptions.RequestException) as exc:
        return f"no Docker engine reachable: {str(exc).splitlines()[0][:160]}"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if HERE in Path(str(item.fspath)).parents]
    if not mine:
        return
    reason = docker_unavailable()
    for item in mine:
        item.add_marker(pytest.mark.integration)
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"testcontainers: {reason}"))


@pytest.fixture(scope="session")
def kafka_url() -> Iterable[str]:
    """Bootstrap servers of a real single-node Kafka in KRaft mode, with memstream's topics."""
    from testcontainers.community.kafka import KafkaContainer

    with KafkaContainer(KAFKA_IMAGE).with_kraft() as kafka:
        url = kafka.get_bootstrap_server()
        asyncio.run(create_topics(url, ALL_TOPICS, PARTITIONS))
        yield url


@pytest.fixture(scope="session")
def opensearch_url() -> Iterable[str]:
    """URL of a real single-node OpenSearch (security plugin off, as in docker-compose.yml)."""
    from testcontainers.community.opensearch import OpenSearchContainer

    # The demo security configuration is not installed either (it refuses weak passwords even
    # with the plugin off); the password is unused.
    container = OpenSearchContainer(OPENSEARCH_IMAGE, initial_admin_password="Unused-2b-Strong!")
    with container.with_env("DISABLE_INSTALL_DEMO_CONFIG", "true") as opensearch:
        config = opensearch.get_config()
        yield f"http://{config['host']}:{config['port']}"


def start_worker(kafka: str, workdir: Path, app_id: str, **env: str) -> Worker:
    """A `memstream worker` process on the real Kafka (multi-record batches, as in production)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KAFKA_ONE_RECORD_BATCHES", "false")
        for name, value in env.items():
            mp.setenv(name, value)
        return Worker(kafka, workdir / "data", app_id, workdir / "worker.log").start()
