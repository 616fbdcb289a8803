"""Creating memstream's topics on a broker (all with one partition count: docs/architecture.md#topics).

The admin client connects as the settings say (KAFKA_SECURITY_PROTOCOL, ...:
`streams.kafka.security`), after a bounded connection check, so a refused certificate or
login is a `BrokerConnectionError` that says so."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Iterable

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError

from streams.kafka.security import admin_kwargs, check_connection

if TYPE_CHECKING:
    from streams.settings import Settings


async def started_admin(bootstrap: str, settings: Settings | None = None) -> AIOKafkaAdminClient:
    """A started admin client of `bootstrap`, connected as `settings` (default: the process's)
    say; raises `BrokerConnectionError` when the broker cannot be reached or refuses it."""
    from streams.settings import get_settings

    settings = settings or get_settings()
    kwargs = admin_kwargs(settings.kafka)
    await check_connection(bootstrap, kwargs, settings.kafka.kafka_connect_timeout_seconds)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="memstream-admin", **kwargs)
    await admin.start()
    return admin


async def create_topics(bootstrap: str, topics: Iterable[str], partitions: int,
                        settings: Settings | None = None) -> list[str]:
    """Create the topics that do not exist yet; return the names created."""
    admin = await started_admin(bootstrap, settings)
    try:
        existing = set(await admin.list_topics())
        missing = [t for t in topics if t not in existing]
        if missing:
            try:
                await admin.create_topics(
                    [NewTopic(name=t, num_partitions=partitions, replication_factor=1) for t in missing]
                )
            except TopicAlreadyExistsError:
                pass
        return missing
    finally:
        await admin.close()


async def topic_configs(bootstrap: str, topic: str, settings: Settings | None = None) -> dict[str, str]:
    """The configs the broker reports for `topic` (e.g. those Faust requested for a table's
    changelog: `streams.privacy.user_keys.CHANGELOG_CONFIGS`)."""
    admin = await started_admin(bootstrap, settings)
    try:
        responses = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        await admin.close()
    return {entry[0]: entry[1] for response in responses for resource in response.resources
            for entry in resource[4]}


def ensure_topics(bootstrap: str, topics: Iterable[str], partitions: int,
                  settings: Settings | None = None) -> list[str]:
    return asyncio.run(create_topics(bootstrap, topics, partitions, settings))
