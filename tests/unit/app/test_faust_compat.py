"""The seek fixes for Faust's consumer (streams/app/faust_compat.py)."""
from __future__ import annotations

import asyncio

from faust.types import TP

from streams.app.faust_compat import ReadOffsets

CANDIDATES = TP("memory.candidates", 1)
CHANGELOG = TP("memstream-memories-changelog", 1)


def offsets() -> ReadOffsets:
    return ReadOffsets(lambda topic: topic.endswith("-changelog"))


def test_a_stale_record_cannot_make_a_stream_partition_drop_re_fetched_records():
    read = offsets()
    # A record fetched before the seek back to the committed offset passes the drain loop ...
    read[CANDIDATES] = 109
    # ... and the re-fetched records from the committed offset on are not taken as duplicates.
    assert read[CANDIDATES] is None


def test_changelog_partitions_keep_fausts_read_offsets():
    read = offsets()
    assert read[CHANGELOG] is None
    read[CHANGELOG] = 41
    assert read[CHANGELOG] == 41
    read.update({CHANGELOG: 7})
    assert read[CHANGELOG] == 7
    assert read.pop(CHANGELOG) == 7
    assert read[CHANGELOG] is None


async def test_the_consumer_fetches_nothing_while_it_seeks():
    """Faust clears the stream queues right after the seek: nothing fetched after the seek may
    be in them (recovery resumes the flow once they are cleared)."""
    from types import SimpleNamespace

    from streams.app.faust_compat import SeekSafeConsumer

    calls: list[str] = []
    consumer = SeekSafeConsumer.__new__(SeekSafeConsumer)
    consumer.app = SimpleNamespace(conf=SimpleNamespace(consumer_auto_offset_reset="earliest"),
                                   tables=SimpleNamespace(changelog_topics=set()))
    consumer._read_offset, consumer._committed_offset = offsets(), {}
    consumer.stop_flow = lambda: calls.append("stop_flow")  # type: ignore[method-assign]

    async def seek_to_committed() -> dict:
        calls.append("seek")
        return {CANDIDATES: 110}

    consumer.seek_to_committed = seek_to_committed  # type: ignore[method-assign]
    await consumer.perform_seek()
    assert calls == ["stop_flow", "seek"]
    assert consumer._committed_offset == {CANDIDATES: 110}


def test_the_worker_consumer_waits_for_records_as_long_as_the_setting_says():
    """The embedded broker answers a fetch only when its wait is over: Faust's fixed 1500 ms
    added ~0.6 s per topic a turn crosses."""
    from types import SimpleNamespace
    from unittest import mock

    from streams.app.faust_compat import TunedConsumerThread

    created = SimpleNamespace(_fetch_max_wait_ms=1500)
    with mock.patch("faust.transport.drivers.aiokafka.AIOKafkaConsumerThread._create_worker_consumer",
                    return_value=created):
        thread = TunedConsumerThread.__new__(TunedConsumerThread)
        assert thread._create_worker_consumer(SimpleNamespace(fetch_max_wait_ms=42)) is created
        assert created._fetch_max_wait_ms == 42


async def test_only_the_app_that_asks_gets_the_transport_fixes(tmp_path):
    """A plain Faust app in the same process keeps Faust's consumer and producer; ours gets the
    seek-safe consumer (with its fetch wait) and the draining producer."""
    import faust
    from faust.transport.drivers.aiokafka import Consumer, Producer, Transport

    from streams.app.factory import create_faust_app
    from streams.app.faust_compat import DrainingProducer, SeekSafeConsumer
    from streams.settings import Settings

    ours = create_faust_app(Settings(table_store="memory://", data_dir=tmp_path,
                                     kafka_fetch_max_wait_ms=42))
    plain = faust.App("plain", broker="kafka://localhost:9092", store="memory://",
                      datadir=str(tmp_path / "plain"))
    assert ours.transport.Consumer is SeekSafeConsumer
    assert ours.producer_transport.Producer is DrainingProducer
    assert ours.transport.fetch_max_wait_ms == 42
    assert type(plain.transport) is Transport and type(plain.producer_transport) is Transport
    assert plain.transport.Consumer is Consumer and plain.producer_transport.Producer is Producer
    assert type(plain.producer) is Producer and type(plain.consumer) is Consumer
    assert type(ours.producer) is DrainingProducer and type(ours.consumer) is SeekSafeConsumer


class _BlockedChannel:
    """A topic whose hand-off to the Kafka producer waits until `release` is set."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.published: list[object] = []

    async def publish_message(self, fut: object, wait: bool = False) -> None:
        await self.release.wait()
        self.published.append(fut)


async def _started_buffer():
    from types import SimpleNamespace

    from streams.app.faust_compat import DrainingProducerBuffer

    buffer = DrainingProducerBuffer()
    buffer.app = SimpleNamespace(conf=SimpleNamespace(producer_threaded=False))
    await buffer.start()
    return buffer


async def test_a_flush_before_the_commit_waits_for_the_table_write_being_handed_on():
    """Faust's buffer flush counted only the queue: with the one message taken off it and not
    yet handed to Kafka, it returned at once and the offsets were committed before the write."""
    from types import SimpleNamespace

    channel = _BlockedChannel()
    buffer = await _started_buffer()
    try:
        buffer.put(SimpleNamespace(message=SimpleNamespace(channel=channel)))
        while not buffer.handing_on:  # the sender task takes it off the queue
            await asyncio.sleep(0)
        assert buffer.size == 0
        flush = asyncio.ensure_future(buffer.flush())
        for _ in range(20):
            await asyncio.sleep(0)
        assert not flush.done()
        channel.release.set()
        await flush
        assert len(channel.published) == 1 and buffer.handing_on == 0
    finally:
        await buffer.stop()


async def test_a_flush_does_not_give_up_on_a_slow_hand_off(monkeypatch):
    """Faust's flush returned when one message took over 0.1 s; each wait here times out at
    once (as on a busy machine) and the flush still waits for every message."""
    from types import SimpleNamespace

    from streams.app import faust_compat

    real_wait_for = asyncio.wait_for
    timeouts = 0

    async def slow_machine(awaitable, timeout):
        nonlocal timeouts
        if not channel.release.is_set():
            timeouts += 1
            if timeouts >= 3:
                channel.release.set()  # the hand-off ends after three timed-out waits
            awaitable.close()
            raise asyncio.TimeoutError
        return await real_wait_for(awaitable, timeout)

    channel = _BlockedChannel()
    buffer = await _started_buffer()
    monkeypatch.setattr(faust_compat.asyncio, "wait_for", slow_machine)
    try:
        buffer.put(SimpleNamespace(message=SimpleNamespace(channel=channel)))
        buffer.put(SimpleNamespace(message=SimpleNamespace(channel=channel)))
        await buffer.flush()
        assert timeouts >= 3 and len(channel.published) == 2
        assert buffer.size == 0 and buffer.handing_on == 0
    finally:
        monkeypatch.undo()
        await buffer.stop()


async def _callbacks_run(loop: asyncio.AbstractEventLoop) -> None:
    """Wait until the callbacks scheduled on `loop` so far have run (they run in order)."""
    done = loop.create_future()
    loop.call_soon_threadsafe(done.set_result, None)
    await done


async def test_a_changelog_partition_faust_pauses_is_not_fetched_until_it_resumes_it():
    """Faust pauses a partition only in its own bookkeeping and aiokafka went on fetching it:
    every recovered table's changelog partitions were in every fetch request, and their first
    fetched records were held, never read. A paused changelog partition is now paused in
    aiokafka's own consumer (whose fetcher skips paused partitions); a stream partition is
    left to Faust's flow control."""
    from types import SimpleNamespace

    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    from streams.app.faust_compat import SeekSafeConsumer, TunedConsumerThread

    loop = asyncio.get_running_loop()
    kafka = AIOKafkaConsumer(bootstrap_servers="localhost:1")  # assigned by hand, never started
    moved = TP("memstream-memories-changelog", 2)  # paused by Faust, no longer assigned here
    kafka.assign([TopicPartition(*CHANGELOG), TopicPartition(*CANDIDATES)])
    thread = TunedConsumerThread.__new__(TunedConsumerThread)
    thread._consumer, thread.thread_loop = kafka, loop
    consumer = SeekSafeConsumer.__new__(SeekSafeConsumer)
    consumer.app = SimpleNamespace(tables=SimpleNamespace(changelog_topics={CHANGELOG.topic}))
    consumer._thread = thread
    consumer._active_partitions = {CHANGELOG, CANDIDATES}
    consumer._paused_partitions = set()
    try:
        consumer.pause_partitions(iter([CHANGELOG, CANDIDATES, moved]))
        await _callbacks_run(loop)
        assert consumer._paused_partitions == {CHANGELOG, CANDIDATES, moved}  # Faust's own
        assert kafka.paused() == {TopicPartition(*CHANGELOG)}

        consumer.resume_partitions([CHANGELOG, moved])
        await _callbacks_run(loop)
        assert kafka.paused() == set()
        assert consumer._paused_partitions == {CANDIDATES}
    finally:
        await kafka.stop()
