"""Small bridges to Faust internals, kept in one place with the reason for each."""
from __future__ import annotations

import asyncio
import threading
import weakref
from collections import defaultdict
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Callable, Collection, Iterable, Iterator

import faust
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition
from faust.streams import _current_event
from faust.transport.drivers.aiokafka import Producer as AIOKafkaDriverProducer
from faust.transport.producer import ProducerBuffer
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread
from faust.transport.drivers.aiokafka import Consumer as AIOKafkaDriverConsumer
from faust.transport.drivers.aiokafka import Transport as AIOKafkaTransport
from faust.types import TP, EventT

from streams.kafka.highwaters import true_end_offsets
from streams.kafka.node_batches import WholeNodeProducer
from streams.observability.thread_cpu import KAFKA_CONSUMER_THREAD
from streams.pipeline.records import Record
from streams.pipeline.write_cache import ScopeCapture

DEFAULT_FETCH_MAX_WAIT_MS = 100
"""How long a fetch waits for records unless the app says otherwise (`KAFKA_FETCH_MAX_WAIT_MS`)."""


@contextmanager
def event_scope(event: EventT) -> Iterator[None]:
    """Make `event` the stream's current event while processing it.

    A table write goes to the changelog partition of the *current* event. When an agent takes
    events in batches (`Stream.take_events`), the current event is the batch's last one, which
    may come from another partition; each event is processed inside its own scope instead.
    """
    token = _current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        _current_event.reset(token)


class ReadOffsets(defaultdict):
    """Faust's per-partition read offsets, blind for stream (non-changelog) partitions.

    Faust's drain loop drops a fetched record whose offset is below the partition's read
    offset, taking it for a duplicate after a seek. After table recovery Faust seeks the stream
    partitions back to their committed offsets while records fetched before the seek may still
    be on their way through the loop; they raise the read offset again and the re-fetched
    records below it are dropped unprocessed (faust-streaming issue #596; seen here as turns
    lost after a SIGKILL). For stream partitions the read offset therefore always reads as
    unknown: nothing is dropped, and a record that arrives twice is processed twice, which is
    harmless because every stage is idempotent by deterministic ids. (The same value feeds
    Faust's offset-gap detection, which only matters for compacted or transactional input
    topics; memstream's are neither.) Changelog partitions keep Faust's bookkeeping.
    """

    def __init__(self, is_changelog: Callable[[str], bool]) -> None:
        super().__init__(lambda: None)
        self._is_changelog = is_changelog

    def __getitem__(self, tp: TP) -> int | None:
        return super().__getitem__(tp) if self._is_changelog(tp.topic) else None

    def __setitem__(self, tp: TP, offset: int | None) -> None:
        if self._is_changelog(tp.topic):
            super().__setitem__(tp, offset)


class TunedConsumerThread(AIOKafkaConsumerThread):
    """The driver's consumer thread, with two changes:

    - highwaters are checked against a fetch (`streams.kafka.highwaters`: the embedded broker's
      ListOffsets answer is low after a multi-record batch, and Faust's table recovery reads
      changelogs up to it);
    - fetches wait at most `fetch_max_wait_ms` (`KAFKA_FETCH_MAX_WAIT_MS`) for records, not
      Faust's fixed 1500 ms: the embedded broker answers a fetch only when its wait is over,
      even when a record arrives meanwhile, so each topic a turn crosses added ~0.6 s on
      average (measured: 615 ms median at 1500, 16 ms at 100). The wait is the transport's
      (`MemstreamTransport.fetch_max_wait_ms`);
    - a changelog partition Faust pauses is paused in aiokafka's fetcher too
      (`set_fetching`, called by `SeekSafeConsumer`);
    - the thread is named `KAFKA_CONSUMER_THREAD`, so its CPU is told apart.
    """

    async def on_thread_started(self) -> None:
        """Name the thread, for its CPU's metric (`streams.observability.thread_cpu`)."""
        threading.current_thread().name = KAFKA_CONSUMER_THREAD
        await super().on_thread_started()

    def set_fetching(self, tps: Collection[TP], fetching: bool) -> None:
        """Resume (`fetching`) or pause `tps` in aiokafka's fetcher, on this thread's loop.

        Faust pauses a partition only in its own bookkeeping: it stops handing the partition's
        records on, while aiokafka goes on fetching it. After table recovery that is every
        changelog partition of the worker's active tables: each fetch request listed all of
        them (40 of the 56 partitions a worker fetched, at 4 partitions a topic), and a changelog
        partition that received records kept the first fetched ones in the fetcher's buffer,
        never read, up to `max_partition_fetch_bytes` each. Changelog partitions are paused
        and resumed here as Faust does (recovery resumes them to read them, standbys stay
        resumed); stream partitions are left to Faust's flow control, which the seek fixes
        rely on. Scheduled on the consumer thread's loop, in order with the fetches Faust
        asks for after it (aiokafka's partition states belong to that loop)."""
        if not tps or self._consumer is None:
            return
        partitions = [TopicPartition(tp.topic, tp.partition) for tp in tps]
        try:
            self.thread_loop.call_soon_threadsafe(_set_fetching, self._consumer, partitions, fetching)
        except RuntimeError:  # the thread's loop is closed: the consumer is stopping
            pass

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        consumer._fetch_max_wait_ms = transport.fetch_max_wait_ms  # noqa: SLF001 - read at start()
        return consumer

    async def _highwaters(self, partitions: list[TP]) -> Any:
        if self.consumer.in_transaction:
            return await super()._highwaters(partitions)
        return await true_end_offsets(self._ensure_consumer(), partitions)


def _set_fetching(consumer: AIOKafkaConsumer, partitions: list[TopicPartition], fetching: bool) -> None:
    """`consumer.resume` or `.pause` of each partition it is still assigned (a rebalance may
    have moved it meanwhile; a new assignment starts with every partition fetching)."""
    assigned = consumer.assignment()
    change = consumer.resume if fetching else consumer.pause
    for tp in partitions:
        if tp in assigned:
            change(tp)


class SeekSafeConsumer(AIOKafkaDriverConsumer):
    """The aiokafka driver's consumer, made at-least-once across restarts and rebalances.

    1. A stream partition without a committed offset is sought to its start (with
       `consumer_auto_offset_reset="earliest"`). aiokafka's `seek_to_committed` leaves such a
       partition wherever the fetcher is, i.e. after records that were fetched during table
       recovery and then thrown away with the cleared stream queues.
    2. Re-fetched records are never dropped as duplicates (`ReadOffsets`).
    3. No record fetched while seeking reaches a stream queue before Faust clears them. Faust's
       recovery resumes the stream partitions, then seeks them (`perform_seek`), then resumes
       its flow control, which clears every stream queue. The seek takes a while (several
       round trips, and longer when an agent blocks the loop meanwhile, e.g. loading the
       embedding model for records it got during recovery); whatever the fetcher delivered
       after the seek was thrown away unprocessed and never fetched again. Seen after a
       SIGKILL as a partition that stops (its remaining records all dropped) or, with one
       record dropped at the head, as a lost turn (Faust then commits past it). The consumer's
       own flow is stopped for the seek — the drain loop drops the record in hand and fetches
       nothing until recovery resumes the flow right after the queues are cleared; records
       fetched before the seek are fetched again from the sought position.
    4. Highwaters (the end of each changelog that table recovery reads up to) are checked
       against a fetch, and fetches wait less (`TunedConsumerThread`).
    5. A changelog partition Faust pauses (every active table's, once recovered) is not
       fetched until Faust resumes it (`TunedConsumerThread.set_fetching`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_offset = ReadOffsets(self._is_changelog)

    def _new_consumer_thread(self) -> TunedConsumerThread:
        return TunedConsumerThread(self, loop=self.loop, beacon=self.beacon)

    def _is_changelog(self, topic: str) -> bool:
        return topic in self.app.tables.changelog_topics

    def pause_partitions(self, tps: Iterable[TP]) -> None:
        """Faust's pause; a changelog partition also stops being fetched (5.)."""
        tpset = set(tps)
        super().pause_partitions(tpset)
        self._thread.set_fetching(self._changelogs(tpset), fetching=False)

    def resume_partitions(self, tps: Iterable[TP]) -> None:
        """Faust's resume; a changelog partition is fetched again (5.)."""
        tpset = set(tps)
        super().resume_partitions(tpset)
        self._thread.set_fetching(self._changelogs(tpset), fetching=True)

    def _changelogs(self, tps: set[TP]) -> list[TP]:
        return [tp for tp in tps if self._is_changelog(tp.topic)]

    async def perform_seek(self) -> None:
        self.stop_flow()  # 3. (Faust's recovery calls resume_flow after clearing the queues)
        committed = await self.seek_to_committed()
        fresh = [tp for tp, offset in committed.items()
                 if not offset and not self._is_changelog(tp.topic)]
        if fresh and self.app.conf.consumer_auto_offset_reset == "earliest":
            for tp, start in (await self.earliest_offsets(*fresh)).items():
                await self.seek(tp, start)
        self._read_offset.update(
            {tp: offset if offset is not None and offset >= 0 else None
             for tp, offset in committed.items()}
        )
        self._committed_offset.update(
            {tp: offset or None for tp, offset in committed.items() if offset is not None}
        )


class DrainingProducerBuffer(ProducerBuffer):
    """Faust's buffer of `send_soon` messages (every table write's changelog record), whose
    `flush` returns only once every message it holds has reached the Kafka producer.

    Faust flushes the producer before it commits the consumer's offsets, so that what the
    processed records wrote is sent before they count as done. But Faust's buffer gives up
    after waiting 0.1 s for one message to be handed on (`flush_atmost` returns on that
    timeout), and does not count the message its sender task is handing on at that moment; on
    a busy machine the offsets were committed with table writes still in the buffer, and a
    SIGKILL then lost them while their records counted as processed (seen as a lifecycle run
    made again at a later record after a kill: its calendar entry was lost). `wait_until_ebb`
    (the back-pressure after each record) keeps Faust's bounded flush.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self.handing_on = 0
        """Messages taken from the queue and not yet given to the Kafka producer."""

    async def _send_pending(self, fut: Any) -> None:
        # Counted from the moment the sender task took the message off the queue: `get()`
        # removes it in the same step of the event loop as this call begins.
        self.handing_on += 1
        try:
            await super()._send_pending(fut)
        finally:
            self.handing_on -= 1

    async def flush(self) -> None:
        """Wait until the queue is empty and nothing is being handed on. Raises RuntimeError
        (as Faust's does) when the producer stopped with messages left."""
        while self.size or self.handing_on:
            if self.state != "running":
                raise RuntimeError("Cannot flush: Producer not Running")
            self.message_sent.clear()
            try:
                await asyncio.wait_for(self.message_sent.wait(), timeout=0.1)
            except asyncio.TimeoutError:
                continue


class DrainingProducer(AIOKafkaDriverProducer):
    """The aiokafka driver's producer with a `DrainingProducerBuffer`, sending through a
    `WholeNodeProducer` (a broker's waiting batches go in one request)."""

    @property
    def _producer_type(self) -> type[AIOKafkaProducer]:
        return WholeNodeProducer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        faust_buffer = self.buffer  # made by Faust's __init__, not started yet
        self.buffer = DrainingProducerBuffer(loop=self.loop, beacon=self.beacon)
        if hasattr(faust_buffer, "threaded_producer"):  # only with producer_threaded
            self.buffer.threaded_producer = faust_buffer.threaded_producer
        self.buffer.app = faust_buffer.app


class MemstreamTransport(AIOKafkaTransport):
    """The aiokafka transport whose consumers are `SeekSafeConsumer`s (fetches waiting at most
    `fetch_max_wait_ms`) and whose producers are `DrainingProducer`s, which send every table
    write before the offsets are committed.

    Given to one app by `use_transport_fixes`: the stock transport, and so every other Faust
    app in the process, keeps Faust's own consumer and producer.
    """

    Consumer = SeekSafeConsumer
    Producer = DrainingProducer

    def __init__(self, url: Any, app: Any, fetch_max_wait_ms: int = DEFAULT_FETCH_MAX_WAIT_MS) -> None:
        super().__init__(url, app)
        self.fetch_max_wait_ms = fetch_max_wait_ms


def use_transport_fixes(app: faust.App, fetch_max_wait_ms: int = DEFAULT_FETCH_MAX_WAIT_MS) -> None:
    """Make `app` (before it starts) consume and produce through `MemstreamTransport`s; other
    apps are left as they are."""
    app.transport = MemstreamTransport(app.conf.broker_consumer, app, fetch_max_wait_ms)
    app.producer_transport = MemstreamTransport(app.conf.broker_producer, app, fetch_max_wait_ms)


def record_of(event: EventT) -> Record:
    """A Faust event as the stages see it (`streams.pipeline.records.Record`)."""
    message = event.message
    return Record(topic=message.topic, partition=message.partition, offset=message.offset,
                  key=message.key, value=event.value, timestamp=message.timestamp, source=event)


def event_scope_of(record: Record) -> AbstractContextManager[None]:
    """`event_scope` of the Faust event a record came from (a `DedupStage` record scope)."""
    return event_scope(record.source)


def _scope_of_event(event: EventT | None) -> AbstractContextManager[object]:
    return nullcontext() if event is None else event_scope(event)


EVENT_CAPTURE = ScopeCapture(current=faust.current_event, enter=_scope_of_event)
"""A held table write remembers the Faust event being processed, and is made in its scope (its
partition's changelog) when the batch ends (`streams.pipeline.write_cache`)."""
