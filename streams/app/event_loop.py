"""The worker's event loop: uvloop, faust-streaming's own choice for production (its `uvloop`
extra), rather than asyncio's pure-Python one.

Why: one worker's drain is bounded by its event loop (docs/capacity.md#where-the-next-bottleneck-is),
and a third of the loop's time went to the framework around our code: asyncio's scheduling of
callbacks and futures, and the Kafka client's sockets, every record produced or consumed
costing its share. uvloop runs the same asyncio API on libuv, in C
(docs/decisions.md#the-worker-runs-on-uvloop).
"""
from __future__ import annotations

import asyncio

import uvloop


def use_uvloop() -> None:
    """Make uvloop the event loop of everything this process starts from now on (the worker's
    Faust app, its web server, the Kafka clients). Call it before any loop is made."""
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
