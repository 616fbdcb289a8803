"""A broker's waiting batches go in one produce request (streams/kafka/node_batches.py)."""
from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

from aiokafka.producer.message_accumulator import MessageAccumulator
from aiokafka.structs import TopicPartition

from streams.kafka.node_batches import WholeNodeAccumulator, WholeNodeProducer

CHANGELOG = TopicPartition("memstream-memories-changelog", 0)
EVENTS = TopicPartition("memory.events", 0)
ELSEWHERE = TopicPartition("memory.progress", 1)
LEADERS = {CHANGELOG: 0, EVENTS: 0, ELSEWHERE: 1}


class Cluster:
    def leader_for_partition(self, tp: TopicPartition) -> int:
        return LEADERS[tp]


async def drained(accumulator_type: type[MessageAccumulator]) -> dict[int, set[TopicPartition]]:
    """What a drain sends, by broker, when the changelog's batch has lingered its 10 ms and the
    events' batch (the same broker's, 5 ms younger) and another broker's have not."""
    clock = SimpleNamespace(now=1000.0)
    with mock.patch("aiokafka.producer.message_accumulator.time") as time:
        time.monotonic = lambda: clock.now
        accumulator = accumulator_type(Cluster(), 16384, 0, 30, linger_ms=10)
        await accumulator.add_message(CHANGELOG, b"user", b"memory", timeout=1)
        clock.now += 0.005
        await accumulator.add_message(EVENTS, b"user", b"events", timeout=1)
        await accumulator.add_message(ELSEWHERE, b"user", b"progress", timeout=1)
        clock.now += 0.006
        nodes, unknown_leaders = accumulator.drain_by_nodes(ignore_nodes=set())
    assert not unknown_leaders
    return {node: set(batches) for node, batches in nodes.items()}


async def test_a_brokers_batches_go_together_once_one_of_them_is_due():
    assert await drained(MessageAccumulator) == {0: {CHANGELOG}}  # aiokafka's: each on its clock
    assert await drained(WholeNodeAccumulator) == {0: {CHANGELOG, EVENTS}}  # the other broker waits


async def test_the_workers_producer_sends_through_the_whole_node_accumulator():
    from streams.app.faust_compat import DrainingProducer

    producer = WholeNodeProducer(bootstrap_servers="localhost:1")  # never started
    try:
        assert type(producer._message_accumulator) is WholeNodeAccumulator
        assert producer._sender._message_accumulator is producer._message_accumulator
    finally:
        await producer.stop()
    assert DrainingProducer._producer_type.fget(None) is WholeNodeProducer  # type: ignore[attr-defined]
