"""A producer that sends every waiting batch of a broker once one of them is due.

aiokafka's accumulator sends a partition's batch when that batch has lingered `linger_ms` (or
is full), each batch on its own clock: records a stage writes at the end of its batch, a few
milliseconds apart and to a dozen partitions (its table changelogs, events, progress,
candidates), went out in as many produce requests as there were moments a batch came due, and
batches that came due while a request was in flight waited for it and went in the next. In a
steady chat at 10 turns/s a worker sent 3.8 produce requests a turn (2.6 batches each) for 14
records; each costs the event loop and the broker a request's work, whatever it holds.

Kafka's Java producer drains a broker whole: once any of its batches can go, the first batch of
every partition it leads goes in the same request (`RecordAccumulator.drain`). `WholeNodeAccumulator`
does the same. Nothing is reordered (a partition's batches still go oldest first, one a
request) and nothing waits longer than before; batches only go sooner, with the one that was
due.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.producer.message_accumulator import MessageAccumulator


class WholeNodeAccumulator(MessageAccumulator):
    """aiokafka's accumulator, draining every partition of a broker with a batch due (module doc)."""

    def drain_by_nodes(self, ignore_nodes: Collection[int],
                       muted_partitions: Collection[Any] = frozenset()) -> tuple[dict[int, dict[Any, Any]], bool]:
        nodes, unknown_leaders_exist = super().drain_by_nodes(ignore_nodes, muted_partitions)
        if not nodes:
            return nodes, unknown_leaders_exist
        for tp in list(self._batches):
            if tp in muted_partitions:
                continue
            leader = self._cluster.leader_for_partition(tp)
            if leader not in nodes or tp in nodes[leader]:
                continue
            batch = self._pop_batch(tp)
            if batch.is_empty():  # as aiokafka's own drain does with one
                batch.done_noack()
            else:
                nodes[leader][tp] = batch
        return nodes, unknown_leaders_exist


class WholeNodeProducer(AIOKafkaProducer):
    """`AIOKafkaProducer` whose accumulator is a `WholeNodeAccumulator`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The sender holds this very accumulator: its class changes, not the object.
        self._message_accumulator.__class__ = WholeNodeAccumulator
