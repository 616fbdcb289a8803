"""The bytes a run's records take at the broker: their record batches as the broker serves them,
compressed by the producer (`KAFKA_PRODUCER_COMPRESSION`) and framed as Kafka frames them.

`bench_scale.read_written` counts each record's key, value and headers as a consumer gets them,
after decompression: what the application handles. This counts what the broker stores and sends
to every consumer group, the figure a broker's disk, its network and a managed Kafka's bill go
by. It reads the partitions with raw fetches (aiokafka's client and `FetchRequest`), walks the
batches by the length every record-batch format starts with, and counts each batch that holds
an offset of the range asked for.
"""
from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition
from aiokafka.client import AIOKafkaClient
from aiokafka.errors import for_code
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.record.default_records import DefaultRecordBatch

from streams.errors import MemstreamError

BATCH_START = struct.Struct(">qi")
"""baseOffset, batchLength: how every record-batch format (magic 0, 1 and 2) starts; the batch
takes `BATCH_START.size + batchLength` bytes."""
MAGIC_AT = 16
"""The offset of a batch's magic byte (after baseOffset, batchLength, partitionLeaderEpoch)."""
FETCH_BYTES = 8 * 2**20
"""The most one fetch of a partition asks for."""
FETCH_WAIT_MS = 500
"""How long a fetch may wait for its first byte. Not 0: the embedded broker reads a partition's
batches until the fetch's deadline and answers a fetch that may not wait with nothing."""


class BatchReadError(MemstreamError, RuntimeError):
    """A partition's batches could not be read (the broker answered with an error, or with
    batches of a format older than Kafka 0.11's)."""


@dataclass
class TopicBatches:
    """A topic's batches in the ranges read: how many, their bytes, their records."""

    batches: int = 0
    bytes: int = 0
    records: int = 0
    compression: set[str] = field(default_factory=set)
    """The codecs its batches were written with (none, gzip, snappy, lz4, zstd)."""


CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
"""Kafka's compression codec ids (the low 3 bits of a v2 batch's attributes)."""


def walk_batches(data: bytes, start: int, end: int, into: TopicBatches) -> int | None:
    """Count into `into` each whole batch of `data` (a fetch's record set) that holds an offset
    of [start, end); the offset to fetch next, or None once `end` is reached or `data` holds
    no whole batch."""
    pos, following = 0, None
    while pos + BATCH_START.size <= len(data):
        base, length = BATCH_START.unpack_from(data, pos)
        size = BATCH_START.size + length
        if pos + size > len(data):
            break  # a batch cut at the fetch's byte limit: fetched again from its offset
        if data[pos + MAGIC_AT] < 2:
            raise BatchReadError("a batch older than record format v2 (Kafka 0.11)")
        if base >= end:
            return None
        batch = DefaultRecordBatch(memoryview(data)[pos:pos + size])
        if batch.next_offset > start:
            into.batches += 1
            into.bytes += size
            into.records += batch.last_offset_delta + 1
            into.compression.add(CODECS.get(batch.compression_type, str(batch.compression_type)))
        following = batch.next_offset
        pos += size
    return following if following is None or following < end else None


async def _fetch(client: AIOKafkaClient, tp: TopicPartition, offset: int) -> bytes:
    leader = client.cluster.leader_for_partition(tp)
    if leader is None or leader < 0:
        raise BatchReadError(f"{tp.topic}[{tp.partition}] has no leader")
    request = FetchRequest(max_wait_time=FETCH_WAIT_MS, min_bytes=1, max_bytes=FETCH_BYTES,
                           isolation_level=0,
                           topics=[(tp.topic, [(tp.partition, offset, FETCH_BYTES)])])
    response = await client.send(leader, request)
    for _topic, partitions in response.topics:
        for _partition, error_code, _highwater, *rest in partitions:
            if error_code:
                raise BatchReadError(f"{tp.topic}[{tp.partition}]: {for_code(error_code).__name__}")
            return bytes(rest[-1] or b"")
    return b""


async def read_batches(broker_url: str, ranges: Mapping[TopicPartition, tuple[int, int]],
                       security: Mapping[str, Any] | None = None) -> dict[str, TopicBatches]:
    """Each topic's batches that hold offsets of `ranges` ([start, end) by partition,
    `bench_scale.written_ranges`), as the broker serves them; connected as
    `security` (default: the settings) says. Raises `BatchReadError`."""
    from streams.tools.client import kafka_security

    out: dict[str, TopicBatches] = {tp.topic: TopicBatches() for tp in ranges}
    if not ranges:
        return out
    client = AIOKafkaClient(bootstrap_servers=broker_url, **kafka_security(security))
    await client.bootstrap()
    try:
        for tp in {tp.topic for tp in ranges}:
            client.add_topic(tp)
        await client.force_metadata_update()
        for tp, (start, end) in sorted(ranges.items()):
            offset: int | None = start
            while offset is not None:
                data = await _fetch(client, tp, offset)
                if not data:
                    break
                offset = walk_batches(data, start, end, out[tp.topic])
    finally:
        await client.close()
    return out


def batch_bytes_per_turn(batches: Mapping[str, TopicBatches], turns: int) -> dict[str, Any]:
    """The report's `kafka_batch_bytes_per_turn`: the batches' bytes per turn in total and by
    topic (the most first), and each topic's codecs."""
    turns = max(turns, 1)
    topics = sorted(batches, key=lambda t: (-batches[t].bytes, t))
    return {"kafka_batch_bytes_per_turn": {
        "total": round(sum(b.bytes for b in batches.values()) / turns, 1),
        "by_topic": {t: round(batches[t].bytes / turns, 1) for t in topics},
        "batches_per_turn": round(sum(b.batches for b in batches.values()) / turns, 2),
        "compression": {t: sorted(batches[t].compression) for t in topics},
        "counted": "the record batches holding the records written during the drain, as the "
                   "broker serves them: compressed, with Kafka's batch and record framing",
    }}
