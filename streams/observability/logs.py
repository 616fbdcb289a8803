"""Logging failures without content: an exception's message can quote the input that caused it
(a user's text, a secret), so logs name the exception's type and where it was raised, never
its message or its locals."""
from __future__ import annotations

import logging
import traceback
from pathlib import Path
from typing import Any


def describe_failure(exc: BaseException) -> str:
    """`Type at file.py:line in function` for the innermost frame of `exc`'s traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__name__
    frame = frames[-1]
    return f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno} in {frame.name}"


OWN_LOGGERS = ("streams", "agents", "sinks", "topics")
"""The project's loggers: they log at `LOG_LEVEL`; every library logs at WARNING unless
`LOG_LEVEL` is debug (Faust's start-up, its timers and the model's quantisation at INFO are two
dozen lines a person starting the service does not need)."""


SERVICE_MODULES = ("streams.app.faust_compat", "streams.app.rocksdb_store",
                   "streams.app.single_lookup_table", "streams.app.batching_stream")
"""The project's modules that subclass Faust's services (producer, consumer, tables, stores,
streams). mode names a service's logger after the module of its class, so these classes' start-up
notes ("[^--DrainingProducer]: Starting...", "opening partition 2 for gen id 0": 40 of those for
10 tables on 4 partitions) came out under the project's names, at LOG_LEVEL, and `memstream run`
printed ~90 lines before `ready`. Under `memstream run` their loggers log at the libraries'
level, like Faust's own (`quiet_services`); `memstream worker` keeps them, as the restart bench
times a start by them (benchmarks/bench_restart.py: "[^--DrainingProducer]: Starting",
"opening partition"). `tests/unit/observability/test_quiet_start.py` finds every such class and
checks it is here."""


def library_level(level: str) -> str:
    """The level libraries log at when the project logs at `level`."""
    return "DEBUG" if level.upper() == "DEBUG" else "WARNING"


def worker_logging(level: str, quiet_services: bool = False) -> dict[str, Any]:
    """Faust's `logging_config`, merged into its own: the root (every library) at
    `library_level`, the project's loggers at `level` (with `quiet_services`, those of
    `SERVICE_MODULES` at `library_level`). Faust's handler keeps `level`, so the project's
    records pass it while the libraries' are cut at their loggers."""
    services = {name: {"level": library_level(level)} for name in SERVICE_MODULES} if quiet_services else {}
    return {"merge": True,
            "root": {"level": library_level(level), "handlers": ["default"]},
            "loggers": {**{name: {"level": level.upper()} for name in OWN_LOGGERS}, **services}}


def configure(level: str) -> None:
    """The same split for a process Faust does not set up (the CLI, before the worker runs)."""
    logging.basicConfig(level=library_level(level),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(level.upper())
