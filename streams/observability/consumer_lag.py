"""Consumer lag per input partition, as the gauge `memstream_consumer_lag_records{topic,partition}`.

Every worker runs the timer for the partitions assigned to it (Faust timers run on each worker
unless `on_leader`). Lag is the partition's highwater (the offset the next produced record will
get, as last reported by a fetch response) minus the consumer's position (the next offset it
will fetch). Records fetched but still queued in a stream's buffer count as consumed, so under a
backlog this reads low by at most the stream buffer; at rest it is exactly 0.

Changelog partitions (table recovery and standbys) are left out: they are not the stream's input.
"""
from __future__ import annotations

import asyncio
import logging
import faust
from aiokafka.errors import IllegalStateError
from faust.exceptions import ConsumerNotStarted
from faust.types import TP

from streams.observability.metrics import CONSUMER_LAG

log = logging.getLogger(__name__)

_POSITION_TIMEOUT_S = 1.0
_reported: set[tuple[str, str]] = set()


async def partition_lags(application: faust.App) -> dict[TP, int]:
    """highwater - position of each assigned input partition whose highwater is known yet."""
    consumer = application.consumer
    changelogs = application.tables.changelog_topics
    lags: dict[TP, int] = {}
    for tp in consumer.assignment():
        if tp.topic in changelogs:
            continue
        try:
            highwater = consumer.highwater(tp)
            if highwater is None:
                continue  # nothing fetched from it yet
            # position() waits while a partition has no valid position (being reset): bounded.
            position = await asyncio.wait_for(consumer.position(tp), _POSITION_TIMEOUT_S)
        except (IllegalStateError, AssertionError):
            continue  # revoked by a rebalance since assignment(); aiokafka asserts in highwater()
        except TimeoutError:
            continue
        if position is None:
            continue
        lags[tp] = max(highwater - position, 0)
    return lags


def publish(lags: dict[TP, int]) -> None:
    """Set the gauge for `lags` and drop the series of partitions this worker no longer has."""
    current = {(tp.topic, str(tp.partition)): lag for tp, lag in lags.items()}
    for labels in _reported - current.keys():
        CONSUMER_LAG.remove(*labels)
    for (topic, partition), lag in current.items():
        CONSUMER_LAG.labels(topic=topic, partition=partition).set(lag)
    _reported.clear()
    _reported.update(current)


def register(app: faust.App, interval_seconds: float) -> None:
    """Refresh the consumer-lag gauge of the worker's Faust `app` every `interval_seconds`
    (METRICS_LAG_INTERVAL_SECONDS)."""

    async def update_consumer_lag() -> None:
        try:
            publish(await partition_lags(app))
        except ConsumerNotStarted:
            log.debug("consumer not started yet; consumer lag not updated")
        except Exception as exc:  # noqa: BLE001 - a metric must never take the worker down
            log.warning("consumer lag not updated: %s", type(exc).__name__)

    app.timer(interval=interval_seconds, name="consumer_lag")(update_consumer_lag)
