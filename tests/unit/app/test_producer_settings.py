"""The worker's producer batches records: a turn's dozen records go out in a few requests, not
one each (KAFKA_PRODUCER_LINGER_MS), unless the broker needs one record per batch."""
from __future__ import annotations

from pathlib import Path

from streams.app.factory import create_faust_app
from streams.settings import KafkaSettings, Settings


def test_the_producer_lingers_and_batches_as_the_settings_say(tmp_path: Path) -> None:
    conf = create_faust_app(Settings(data_dir=tmp_path, kafka_producer_linger_ms=7)).conf
    assert conf.producer_linger_ms == 7 and conf.producer_max_batch_size > 1
    assert KafkaSettings.model_fields["kafka_producer_linger_ms"].default > 0
    one = create_faust_app(Settings(data_dir=tmp_path, kafka_one_record_batches=True)).conf
    assert one.producer_max_batch_size == 1


async def test_the_producer_compresses_with_zstd_unless_told_otherwise(tmp_path: Path) -> None:
    from aiokafka import AIOKafkaProducer

    conf = create_faust_app(Settings(data_dir=tmp_path)).conf
    assert conf.producer_compression_type == "zstd"
    # aiokafka refuses a codec whose library is missing (zstd needs cramjam): installed here.
    await AIOKafkaProducer(compression_type=conf.producer_compression_type).stop()
    off = create_faust_app(Settings(data_dir=tmp_path, kafka_producer_compression="none")).conf
    assert off.producer_compression_type is None
