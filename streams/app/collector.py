"""Python's cycle collector, tuned for a worker: what it loaded is frozen out of the scans, and the
young generation is collected after 20,000 new objects rather than 700.

A worker makes and drops tens of thousands of short-lived containers a second (parsed table
values, pydantic documents, events, Kafka batches). With Python's defaults (700, 10, 10) the
collector ran about 50 young and 5 middle collections a second while a worker drained a backlog,
and a full one every few seconds over everything still alive (the index's documents included):
0.17 ms of CPU a turn on the event loop's thread, measured with a `gc.callbacks` timer over the
six LoCoMo dev conversations, 0.02 ms with these thresholds. Reference counting frees almost all
of those objects anyway; the collector is only for cycles (exceptions with their tracebacks,
futures), which it still finds, a little later. A young collection of 20,000 objects is about a
millisecond, far inside a turn's latency budget.

The objects that are alive when the worker starts (modules, settings, the app, the stages) stay
alive until it stops: `gc.freeze` moves them to the permanent generation, so no full collection
walks them again (docs/decisions.md#the-cycle-collector-runs-less-often-in-a-worker).
"""
from __future__ import annotations

import gc

WORKER_THRESHOLDS = (20_000, 20, 20)
"""`gc.set_threshold` of a worker: new objects before a young collection, young collections before
a middle one, middle ones before a full one."""


def tune_collector() -> None:
    """Freeze what is alive now out of the collector's scans and set `WORKER_THRESHOLDS`; called
    once, as the worker starts, after its app is built."""
    gc.collect()  # what is garbage now is not frozen with the rest
    gc.freeze()
    gc.set_threshold(*WORKER_THRESHOLDS)
