"""True end offsets, checked against a fetch.

The embedded Tansu broker answers ListOffsets(latest) with the *base offset + 1* of a
partition's last record batch, not with the offset after its last record: after a batch of 5
records at offsets 0-4 it says 1, not 5. Faust's table recovery trusts that answer: it
stops reading a changelog early (tables recovered without their last writes) or, when the
table's persisted offset is past it, fails with a ConsistencyError. The high watermark in a
Fetch response is right, so the end offset is checked by fetching the partition's last batch
(at the reported end - 1) and taking the larger of the two answers. On a broker that answers
ListOffsets correctly the check changes nothing.

This is what lets producers batch records again (`KAFKA_ONE_RECORD_BATCHES` was the earlier
workaround: one record per batch made the reported end right, and capped throughput).
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

PROBE_TIMEOUT_S = 10.0
"""How long the check waits for the fetch responses before keeping the reported values."""


def probe_settings(consumer: AIOKafkaConsumer) -> dict[str, Any]:
    """Connection settings of `consumer` for a probe consumer (same servers and security)."""
    client = consumer._client  # noqa: SLF001 - aiokafka keeps no public copy of its config
    settings: dict[str, Any] = {"bootstrap_servers": client._bootstrap_servers,
                                "security_protocol": client._security_protocol}
    for name in ("ssl_context", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password",
                 "sasl_kerberos_service_name", "sasl_kerberos_domain_name",
                 "sasl_oauth_token_provider"):
        value = getattr(client, "_" + name, None)
        if value is not None:
            settings[name] = value
    return settings


async def fetched_highwaters(settings: Mapping[str, Any], reported: Mapping[TopicPartition, int],
                             timeout: float = PROBE_TIMEOUT_S) -> dict[TopicPartition, int]:
    """The high watermark each partition's Fetch response carries, fetching at `reported - 1`.

    Partitions whose answer does not arrive within `timeout` are left out."""
    partitions = [tp for tp, end in reported.items() if end is not None]
    if not partitions:
        return {}
    probe = AIOKafkaConsumer(**settings, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", fetch_max_wait_ms=100)
    await probe.start()
    try:
        probe.assign(partitions)
        for tp in partitions:
            probe.seek(tp, max(reported[tp] - 1, 0))
        found: dict[TopicPartition, int] = {}
        deadline = time.monotonic() + timeout
        while len(found) < len(partitions) and time.monotonic() < deadline:
            await probe.getmany(*[tp for tp in partitions if tp not in found], timeout_ms=200)
            for tp in partitions:
                highwater = probe.highwater(tp)
                if highwater is not None:
                    found[tp] = highwater
        return found
    finally:
        await probe.stop()


async def true_end_offsets(consumer: AIOKafkaConsumer,
                           partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """`consumer.end_offsets(partitions)`, corrected by a fetch where the broker answered low."""
    reported = await consumer.end_offsets(list(partitions))
    fetched = await fetched_highwaters(probe_settings(consumer), reported)
    return {tp: max(end, fetched.get(tp, end)) for tp, end in reported.items()}
