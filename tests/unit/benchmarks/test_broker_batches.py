"""The bench's bytes at the broker (`benchmarks.broker_batches`): record batches made by
aiokafka's own batch builder, compressed as a producer compresses them, walked as a fetch
returns them. Read from a real broker: `tests/integration/test_events_wire.py`."""
from __future__ import annotations

import struct

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from benchmarks.broker_batches import BatchReadError, TopicBatches, batch_bytes_per_turn, walk_batches

ZSTD, NONE = 4, 0


def batch(base: int, count: int, codec: int) -> bytes:
    """A v2 record batch of `count` similar JSON records from offset `base`."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=2**20)
    for i in range(count):
        value = b'{"event_id":"e%d","kind":"created","user_id":"ana","summary":""}' % i
        builder.append(i, timestamp=None, key=b"ana", value=value, headers=[])
    built = builder.build()
    struct.pack_into(">q", built, 0, base)  # the broker sets the base offset
    return bytes(built)


def test_each_batch_holding_an_offset_of_the_range_is_counted_whole():
    batches = [batch(0, 10, ZSTD), batch(10, 10, ZSTD), batch(20, 10, ZSTD)]
    out = TopicBatches()
    assert walk_batches(b"".join(batches), 15, 25, out) is None, "the range's end reached"
    assert (out.batches, out.records, out.bytes) == (2, 20, len(batches[1]) + len(batches[2]))
    assert out.compression == {"zstd"}


def test_compressed_batches_are_smaller_than_the_same_records_in_clear():
    zstd, clear = TopicBatches(), TopicBatches()
    walk_batches(batch(0, 50, ZSTD), 0, 50, zstd)
    walk_batches(batch(0, 50, NONE), 0, 50, clear)
    assert zstd.records == clear.records == 50 and clear.compression == {"none"}
    assert zstd.bytes < clear.bytes / 3


def test_a_batch_cut_by_the_fetch_is_fetched_again_from_its_offset():
    whole, cut = batch(0, 5, ZSTD), batch(5, 5, ZSTD)
    out = TopicBatches()
    assert walk_batches(whole + cut[:-3], 0, 100, out) == 5
    assert out.batches == 1


def test_a_batch_older_than_format_v2_is_refused():
    old = bytearray(batch(0, 1, NONE))
    old[16] = 1  # magic 1
    with pytest.raises(BatchReadError):
        walk_batches(bytes(old), 0, 1, TopicBatches())


def test_the_report_gives_bytes_per_turn_by_topic_with_their_codecs():
    counted = {"memory.events": TopicBatches(2, 800, 30, {"zstd"}),
               "chat.turns": TopicBatches(4, 1200, 10, {"none"})}
    report = batch_bytes_per_turn(counted, 10)["kafka_batch_bytes_per_turn"]
    assert report["total"] == 200.0 and list(report["by_topic"]) == ["chat.turns", "memory.events"]
    assert report["batches_per_turn"] == 0.6
    assert report["compression"] == {"chat.turns": ["none"], "memory.events": ["zstd"]}
