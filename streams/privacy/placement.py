"""Which partition a user belongs to, and the check that keeps a record that arrived on another
partition from making or shredding the user's data key there.

Every topic is keyed by user_id and hashed like Kafka's default partitioner (murmur2 of the key),
so a user's records, tables and key all live on one partition. A table write in the worker goes
to the changelog partition of the record being processed (`streams.app.faust_compat.event_scope`),
and the worker reads its tables per partition. A record that a producer placed on another
partition (another partitioner, e.g. librdkafka's CRC32 default, or a key that is not the
user_id) would therefore make the user a *second* data key on that partition: content sealed
with it would not open where the user lives, and a purge would shred only one of the two keys.
So such a record never makes (or shreds) a key: `check_routed` raises `MisroutedRecord`.
"""
from __future__ import annotations

from aiokafka.partitioner import murmur2

from streams.errors import InvalidRecord


class MisroutedRecord(InvalidRecord, ValueError):
    """A record on a partition that is not its user's: it may not make or shred a data key."""

    def __init__(self, partition: int, expected: int) -> None:
        super().__init__("wrong_partition", f"the record is on partition {partition}, its "
                         f"user's partition is {expected} (murmur2 of the user_id key)")
        self.partition = partition
        self.expected = expected


def partition_for(user_id: str, partitions: int) -> int:
    """The partition of `user_id` among `partitions`, as Kafka's default partitioner (and
    aiokafka's, which the worker produces with) places a record keyed by it."""
    return (murmur2(user_id.encode("utf-8")) & 0x7FFFFFFF) % partitions


def current_record_partition() -> tuple[int, int] | None:
    """(partition, partition count) of the Kafka record the worker is processing now; None
    outside a worker's stream (in process, a web handler, Faust's `test_context`, whose records
    all sit on partition 0 of a topic the consumer never fetched)."""
    from faust import current_event

    event = current_event()
    if event is None:
        return None
    try:
        partitions = event.app.consumer.topic_partitions(event.message.topic)
    except (AttributeError, RuntimeError):
        return None
    if not partitions:
        return None
    return int(event.message.partition), int(partitions)


def check_routed(user_id: str) -> None:
    """Raise `MisroutedRecord` if the record being processed is not on `user_id`'s partition."""
    where = current_record_partition()
    if where is None:
        return
    partition, partitions = where
    expected = partition_for(user_id, partitions)
    if partition != expected:
        raise MisroutedRecord(partition, expected)
