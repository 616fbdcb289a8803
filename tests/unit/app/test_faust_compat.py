"""The seek fixes for Faust's consumer (streams/app/faust_compat.py)."""
from __future__ import annotations

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

    from streams.app.faust_compat import TunedConsumerThread, install_seek_fix

    created = SimpleNamespace(_fetch_max_wait_ms=1500)
    with mock.patch("faust.transport.drivers.aiokafka.AIOKafkaConsumerThread._create_worker_consumer",
                    return_value=created):
        install_seek_fix(42)
        try:
            thread = TunedConsumerThread.__new__(TunedConsumerThread)
            assert thread._create_worker_consumer(None) is created
            assert created._fetch_max_wait_ms == 42
        finally:
            install_seek_fix()
