"""Creating memstream's topics on a broker (all with one partition count: SPEC §2)."""
from __future__ import annotations

import asyncio
from typing import Iterable

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError


async def create_topics(bootstrap: str, topics: Iterable[str], partitions: int) -> list[str]:
    """Create the topics that do not exist yet; return the names created."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="memstream-admin")
    await admin.start()
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


async def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    """The configs the broker reports for `topic` (e.g. those Faust requested for a table's
    changelog: `streams.privacy.user_keys.CHANGELOG_CONFIGS`)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="memstream-admin")
    await admin.start()
    try:
        responses = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        await admin.close()
    return {entry[0]: entry[1] for response in responses for resource in response.resources
            for entry in resource[4]}


def ensure_topics(bootstrap: str, topics: Iterable[str], partitions: int) -> list[str]:
    return asyncio.run(create_topics(bootstrap, topics, partitions))
